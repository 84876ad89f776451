"""A prompt with images, as the engine holds it: text runs and image chunks, in order.

``Projector.tokenize`` makes one; the scheduler walks its parts (text runs into token
batches, each image through ``Projector.encode`` into an ``EmbeddingBatch``). For the
prefix cache, ``token_ids`` flattens it into one list of ids, one per context entry:
text tokens as they are, and for each image a run of negative stand-in ids derived from
the picture's digest, which no real token has. Two prompts then share a prefix through
an image exactly when they show the same picture there, and the plain longest-common-
prefix over ids the scheduler already does finds it; ``whole_prefix`` rounds a match
down so that it never ends inside an image (an image is decoded whole, or not at all).

Entries and positions: an entry is one KV cell (a text token or an image embedding);
a position is what rotary attention sees. They are the same but for models that place
an image on a grid (M-RoPE: Qwen2-VL, Qwen2.5-VL, Qwen3-VL), where an image of
``n_tokens`` embeddings advances the position by only ``n_pos`` (its grid's longer
side) and the text after it continues from there. ``pos_at`` maps an entry to its
position; context limits count entries (cells are what fills up), positions are only
what a decode is told.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Protocol

import numpy as np
import numpy.typing as npt

_STAND_IN_SPAN = 2**31 - 1  # stand-ins run from -1 down to -(2**31 - 1): int32, all negative


class ChunkSource(Protocol):
    """Owns the native chunks a prompt's images point into (``projector.py``)."""

    def held(self, index: int) -> AbstractContextManager[int]:
        """Chunk ``index``'s native pointer, valid until the block ends."""
        ...

    def free(self) -> None:
        """Release the chunks; a block holding one still finishes with it."""
        ...


@dataclass(frozen=True)
class TextRun:
    """Text tokens between images (the projector's begin/end-of-image text included)."""

    tokens: tuple[int, ...]

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    @property
    def n_pos(self) -> int:
        return len(self.tokens)


@dataclass(frozen=True)
class ImageChunk:
    """One image's place in a prompt: ``n_tokens`` embeddings taking ``n_pos`` positions.

    Two chunks are equal when they show the same picture the same way (``id`` is the
    picture's digest, ``ImageInput.digest``), so a prefix cache compares them like
    tokens."""

    id: str
    n_tokens: int
    n_pos: int
    non_causal: bool
    """Whether the model reads this image's embeddings with full (bidirectional)
    attention among themselves: then all of them go into one decode, causal off."""
    index: int = field(compare=False, repr=False)
    source: ChunkSource = field(compare=False, repr=False)

    def stand_in_ids(self) -> tuple[int, ...]:
        """Negative ids for this image's context entries, the same for the same picture."""
        base = int.from_bytes(hashlib.sha256(self.id.encode()).digest()[:8], "little")
        return tuple(-1 - (base + i) % _STAND_IN_SPAN for i in range(self.n_tokens))


PromptPart = TextRun | ImageChunk


class MediaPrompt:
    """A tokenized prompt with images. Owns the native chunks behind its images: close
    it (or use it as a context manager) when the request is done."""

    def __init__(self, parts: Sequence[PromptPart], source: ChunkSource) -> None:
        self.parts: tuple[PromptPart, ...] = tuple(parts)
        self._source = source
        starts, offset = [], 0
        for part in self.parts:
            starts.append(offset)
            offset += part.n_tokens
        self._starts = starts

    @property
    def images(self) -> tuple[ImageChunk, ...]:
        return tuple(part for part in self.parts if isinstance(part, ImageChunk))

    @property
    def n_tokens(self) -> int:
        """Entries in the context: text tokens plus image embeddings."""
        return sum(part.n_tokens for part in self.parts)

    @property
    def n_pos(self) -> int:
        """Positions taken (equal to ``n_tokens`` unless a model packs images)."""
        return sum(part.n_pos for part in self.parts)

    def token_ids(self) -> list[int]:
        """One id per context entry: text tokens, and each image's stand-in ids."""
        ids: list[int] = []
        for part in self.parts:
            ids.extend(part.tokens if isinstance(part, TextRun) else part.stand_in_ids())
        return ids

    def whole_prefix(self, n: int) -> int:
        """The longest prefix of at most ``n`` entries that does not end inside an image."""
        if n <= 0:
            return 0
        index = bisect.bisect_right(self._starts, n - 1) - 1  # the part entry n-1 is in
        if index < 0:
            return 0
        part, start = self.parts[index], self._starts[index]
        if isinstance(part, ImageChunk) and n < start + part.n_tokens:
            return start
        return min(n, self.n_tokens)

    def pos_at(self, n: int) -> int:
        """The position entry ``n`` is decoded at, for ``n`` outside an image (at a
        part's start or in a text run), up to the prompt's end: the entries before it,
        each image counted by its ``n_pos``."""
        pos = 0
        for start, part in zip(self._starts, self.parts, strict=True):
            if start + part.n_tokens > n:
                if isinstance(part, ImageChunk) and n > start:
                    raise ValueError(f"entry {n} is inside an image")
                return pos + n - start
            pos += part.n_pos
        return pos + n - self.n_tokens

    def image_at(self, n: int) -> ImageChunk | None:
        """The image whose first entry is entry ``n``, if one starts there."""
        index = bisect.bisect_left(self._starts, n)
        if index < len(self.parts) and self._starts[index] == n:
            part = self.parts[index]
            return part if isinstance(part, ImageChunk) else None
        return None

    def text_end(self, n: int) -> int:
        """Where the text from entry ``n`` on stops: the next image's start, or the end.
        A batch of tokens takes text up to there and no further."""
        for start, part in zip(self._starts, self.parts, strict=True):
            if isinstance(part, ImageChunk) and start + part.n_tokens > n:
                return max(start, n)
        return self.n_tokens

    def close(self) -> None:
        self._source.free()

    def __enter__(self) -> MediaPrompt:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


@dataclass(frozen=True, eq=False)
class ImageEmbeddings:
    """What one image chunk becomes: ``values`` is float32 [n_tokens, n_embd]."""

    chunk_id: str
    values: npt.NDArray[np.float32]
    non_causal: bool
