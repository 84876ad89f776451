"""Tokenizing a follow-up prompt with the token ids its previous turn already has.

A chat client sends the model's reply back as text in the next turn, and text is not
tokens: the ids the model sampled are often not the tokenization of their own text
(" hello" sampled as "▁he", "l", "lo" instead of "▁hello"; a random-weight model almost
never samples the canonical split). Re-tokenized, the follow-up differs from the slot's
KV cache from the first token of the reply on, and the whole reply is evaluated again.

So the engine remembers, for each recent generation, the prompt text with its tokens and
the generated ids with their bytes. A new prompt that starts with such a prompt text,
then (a prefix of) that reply byte for byte, takes those ids, and only the rest of its
text is tokenized, on its own. A fragment tokenized on its own matches what the tokenizer
would make of it in place only where llama.cpp splits the text anyway: at a special
token, which special parsing cuts out before any merge (and after which SentencePiece
adds its space prefix either way). So the ids are reused only when the rest begins with
a special token (the end-of-turn token that chat templates write after a reply), or is
empty; otherwise the prompt is tokenized whole, as before.

Where the model's own split was canonical, the result equals a plain tokenization; where
it was not, the follow-up carries the ids the model actually produced, and its reply is
the one a fresh engine gives for those ids.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hearth.engine.model import LlamaModel

log = logging.getLogger(__name__)

# How many characters of the rest are tokenized to see whether a special token opens it;
# longer than any special token's text.
_HEAD_CHARS = 256


@dataclass(frozen=True)
class Known:
    """One generation: its prompt text and tokens, then the ids it sampled with their
    bytes (``ends[i]`` is where piece ``i`` ends within ``pieces``)."""

    text: str
    n_bytes: int  # of ``text`` in UTF-8
    add_special: bool  # whether the tokenizer added BOS to ``text``
    tokens: tuple[int, ...]
    generated: tuple[int, ...]
    pieces: bytes
    ends: tuple[int, ...]


@dataclass(frozen=True)
class Reuse:
    """Token ids for the first ``n_bytes`` of a prompt's UTF-8, and the text after them."""

    tokens: tuple[int, ...]
    n_bytes: int
    rest: str


def known_generation(
    text: str,
    add_special: bool,
    tokens: Sequence[int],
    generated: Sequence[int],
    pieces: Sequence[bytes],
) -> Known:
    """An entry for ``TokenMemo.record``. The generated ids stop before the first one
    without text (a control token the client never saw): a prompt's text cannot hold it."""
    kept = len(pieces)
    for i, piece in enumerate(pieces):
        if not piece:
            kept = i
            break
    return Known(
        text=text,
        n_bytes=len(text.encode("utf-8")),
        add_special=add_special,
        tokens=tuple(tokens),
        generated=tuple(generated[:kept]),
        pieces=b"".join(pieces[:kept]),
        ends=tuple(itertools.accumulate(len(p) for p in pieces[:kept])),
    )


def common_bytes(a: bytes, b: bytes) -> int:
    """How many leading bytes ``a`` and ``b`` share (comparisons at C speed)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def reuse_of(known: Known, text: str, data: bytes) -> Reuse | None:
    """What ``known`` gives a prompt ``text`` (``data`` is its UTF-8): its prompt tokens
    and the generated ids whose pieces the prompt repeats exactly; None when the prompt
    does not start with its prompt text, or the ids end inside a character."""
    if not text.startswith(known.text):
        return None
    after = data[known.n_bytes : known.n_bytes + len(known.pieces)]
    k = bisect.bisect_right(known.ends, common_bytes(after, known.pieces))
    n_bytes = known.n_bytes + (known.ends[k - 1] if k else 0)
    try:
        rest = data[n_bytes:].decode("utf-8")
    except UnicodeDecodeError:  # a piece ended inside a character
        return None
    return Reuse(known.tokens + known.generated[:k], n_bytes, rest)


class TokenMemo:
    """The last few generations of one loaded model, newest last. ``record`` runs on the
    scheduler thread, ``reuse`` on request threads: entries are immutable, the lock
    guards only the list."""

    def __init__(self, capacity: int) -> None:
        self._entries: deque[Known] = deque(maxlen=max(capacity, 1))
        self._lock = threading.Lock()

    def record(self, known: Known) -> None:
        with self._lock:
            self._entries.append(known)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def candidates(self, text: str, add_special: bool) -> Iterator[Reuse]:
        """Reuses for ``text``, longest first (newest first among equals)."""
        with self._lock:
            entries = list(self._entries)
        found: dict[int, Reuse] = {}
        data: bytes | None = None
        for known in reversed(entries):
            if known.add_special != add_special or not text.startswith(known.text):
                continue
            data = data if data is not None else text.encode("utf-8")
            reuse = reuse_of(known, text, data)
            if reuse is not None:
                found.setdefault(reuse.n_bytes, reuse)
        return iter(sorted(found.values(), key=lambda r: -r.n_bytes))


Tokenize = Callable[[str], list[int]]  # text, no BOS added, special tokens parsed


def opens_with_special(rest: str, tokenize: Tokenize, specials: Mapping[int, str]) -> bool:
    """Whether ``rest`` begins with a special token's text, as the tokenizer parses it."""
    head = tokenize(rest[:_HEAD_CHARS])
    if not head:
        return False
    special = specials.get(head[0])
    return special is not None and rest.startswith(special)


def tokenize_reusing(
    memo: TokenMemo,
    text: str,
    add_special: bool,
    tokenize: Tokenize,
    specials: Mapping[int, str],
    *,
    tries: int = 3,
) -> list[int] | None:
    """``text``'s tokens with the longest reuse the memo allows, or None when there is
    none (the caller tokenizes the whole text). ``specials`` maps the ids of the tokens
    special parsing cuts out (control and user-defined) to their text."""
    for reuse in itertools.islice(memo.candidates(text, add_special), tries):
        if not reuse.rest:
            tokens = list(reuse.tokens)
        elif opens_with_special(reuse.rest, tokenize, specials):
            tokens = [*reuse.tokens, *tokenize(reuse.rest)]
        else:
            continue
        log.debug("prompt: %d tokens reused, %d tokenized", len(reuse.tokens),
                  len(tokens) - len(reuse.tokens))  # fmt: skip
        return tokens
    return None


class PromptTokenizer:
    """A loaded model's prompts as tokens: BOS exactly once, and for generating, the ids
    of recent turns reused. ``memo`` is what the scheduler records finished turns in."""

    def __init__(self, model: LlamaModel, bos_text: str, specials: Mapping[int, str]) -> None:
        self._model = model
        self._bos_text = bos_text
        self._specials = specials
        self.memo = TokenMemo(2 * model.n_slots)

    def adds_bos(self, text: str, add_bos: bool) -> bool:
        """Templates usually write the BOS text themselves; never add a second one."""
        return add_bos and not (bool(self._bos_text) and text.startswith(self._bos_text))

    def tokenize(self, text: str, add_bos: bool) -> list[int]:
        """``text`` as the tokenizer splits it (what token counts use)."""
        add = self.adds_bos(text, add_bos)
        return self._model.tokenize(text, add_special=add, parse_special=True)

    def for_generation(self, text: str, add_bos: bool) -> tuple[list[int], bool]:
        """``text``'s tokens with the longest reuse the memo allows, and whether BOS was
        added (the scheduler records both with the turn)."""
        add = self.adds_bos(text, add_bos)
        tokens = tokenize_reusing(self.memo, text, add, self._rest, self._specials)
        if tokens is None:
            tokens = self._model.tokenize(text, add_special=add, parse_special=True)
        return tokens, add

    def _rest(self, text: str) -> list[int]:
        return self._model.tokenize(text, add_special=False, parse_special=True)
