"""Per-request state inside the scheduler, and the choice of slot for a new request."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from hearth.core.generation import Finished, GenerationEvent, TokenLogprob, Usage
from hearth.core.sampling import SamplingParams
from hearth.engine.media_prompt import MediaPrompt
from hearth.engine.prompt_store import SavedState
from hearth.engine.sampler import SamplerChain
from hearth.engine.text_stream import TextStream

EventSink = Callable[[GenerationEvent], None]


@dataclass
class Job:
    """A tokenized request waiting for, or running in, a slot."""

    tokens: list[int]
    params: SamplingParams
    sink: EventSink
    cancelled: threading.Event = field(default_factory=threading.Event)
    enqueued_at: float = field(default_factory=time.perf_counter)
    request_id: str = ""  # the HTTP edge's id for the request
    # The prompt text the tokens stand for (None for token prompts), and whether BOS was
    # added to it: what token_reuse needs to hand this turn's ids to the next one.
    text: str | None = None
    add_special: bool = False
    # A prompt with images: ``tokens`` are its ``token_ids`` (images as stand-in ids).
    # Closed with the finished event, which is the scheduler's last use of the job.
    media: MediaPrompt | None = None
    # How many of ``tokens`` the chat's prompt with another last message shares: where
    # its next request likely branches off, a sliding-window model's checkpoint (0: none).
    branch_at: int = 0

    # A saved prompt state read from disk for it as it was queued (prompt_restore.py),
    # until the scheduler loads it into its slot.
    saved: SavedState | None = None

    def text_end(self, start: int) -> int:
        """Where the prompt's text from ``start`` stops: at the next image, or its end."""
        return self.media.text_end(start) if self.media is not None else len(self.tokens)

    def emit(self, event: GenerationEvent) -> None:
        """Deliver an event; a client whose event loop is gone counts as cancelled.

        The finished event leaves labelled with the job's request id, whichever path
        of the scheduler ended it."""
        finished = isinstance(event, Finished)
        if isinstance(event, Finished) and event.request_id != self.request_id:
            event = replace(event, request_id=self.request_id)
        try:
            self.sink(event)
        except RuntimeError:
            self.cancelled.set()
        finally:
            if finished and self.media is not None:
                self.media.close()


def make_async_sink(
    loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[GenerationEvent]
) -> EventSink:
    """Deliver events from the scheduler thread into an asyncio queue."""

    def sink(event: GenerationEvent) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, event)

    return sink


@dataclass
class Slot:
    """One sequence of the shared context: its KV cache survives between requests."""

    seq_id: int
    cached: list[int] = field(default_factory=list)
    # Positions minus entries at the end of ``cached``: nonzero past an image that
    # takes fewer positions than embeddings (M-RoPE, media_prompt.py). Set with cached.
    pos_shift: int = 0
    last_used: float = 0.0
    job: Job | None = None
    sampler: SamplerChain | None = None
    stream: TextStream | None = None
    # Progress of the running job.
    n_prompt: int = 0
    n_cached_at_start: int = 0
    n_disk_at_start: int = 0  # of those, restored from the prompt cache on disk
    image_ms: float = 0.0  # the vision encoder's time on this job's images
    image_tokens: int = 0  # embeddings of this job's images decoded (not cached ones)
    n_generated: int = 0
    pending_token: int | None = None
    # A prompt position where the prefill pauses for the prompt cache to save the state
    # (a sliding-window model's, which serves no shorter prefix: prompt_cache.py); 0: none.
    checkpoint: int = 0
    started_at: float = 0.0
    first_token_at: float = 0.0
    prompt_done_at: float = 0.0
    pending_logprobs: list[TokenLogprob] = field(default_factory=list)
    # The ids sampled for the running job and their bytes as streamed (for token_reuse).
    generated: list[int] = field(default_factory=list)
    pieces: list[bytes] = field(default_factory=list)

    def take_logprobs(self) -> tuple[TokenLogprob, ...]:
        taken, self.pending_logprobs = tuple(self.pending_logprobs), []
        return taken

    @property
    def n_past(self) -> int:
        """The position the next entry of this slot's sequence is decoded at."""
        return len(self.cached) + self.pos_shift

    def keep(self, entries: list[int], pos_shift: int = 0) -> None:
        """What the KV cache holds now: ``entries``, the last of them ``pos_shift``
        positions off its index."""
        self.cached = entries
        self.pos_shift = pos_shift

    @property
    def busy(self) -> bool:
        return self.job is not None

    @property
    def prefilling(self) -> bool:
        return self.job is not None and len(self.cached) < self.n_prompt

    @property
    def prefill_end(self) -> int:
        """Where this step's prompt chunk must end at the latest: the checkpoint, or the
        prompt's end."""
        return self.checkpoint if self.checkpoint > len(self.cached) else self.n_prompt

    def usage(self) -> Usage:
        return Usage(
            prompt_tokens=self.n_prompt,
            completion_tokens=self.n_generated,
            cached_tokens=self.n_cached_at_start,
        )


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share; blocks are compared at C speed, as
    prompts run to tens of thousands of tokens and every admission compares each slot."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i : i + _BLOCK] == b[i : i + _BLOCK]:
        i += _BLOCK
    i = min(i, n)
    while i < n and a[i] == b[i]:
        i += 1
    return i


_BLOCK = 256
