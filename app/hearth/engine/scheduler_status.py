"""What the scheduler reports about itself: slot status and finished requests."""

from __future__ import annotations

from dataclasses import dataclass

from hearth.core.generation import FinishReason, Timings, Usage
from hearth.engine.slots import Job, Slot


@dataclass(frozen=True)
class SlotStatus:
    seq_id: int
    busy: bool
    cached_tokens: int


@dataclass(frozen=True)
class SchedulerStatus:
    slots: tuple[SlotStatus, ...]
    queue_depth: int
    decode_tokens_per_s: float
    draft_tokens: int = 0  # speculative decoding, since the load
    accepted_tokens: int = 0

    @property
    def acceptance(self) -> float | None:
        """Share of drafted tokens the target accepted; None before any draft."""
        return self.accepted_tokens / self.draft_tokens if self.draft_tokens else None


@dataclass(frozen=True)
class CompletedRequest:
    """One finished generation, for the live request log."""

    finished_at: float  # time.time()
    reason: FinishReason
    usage: Usage
    timings: Timings | None


def decode_error(code: int) -> str:
    if code == 1:
        return "The context is full: no room in the KV cache for this batch."
    if code == 2:
        return "Decoding was aborted."
    return f"llama_decode failed with code {code}."


def empty_usage(job: Job) -> Usage:
    return Usage(prompt_tokens=len(job.tokens), completion_tokens=0)


def slot_timings(slot: Slot, job: Job, end: float, drafted: int, accepted: int) -> Timings:
    """The timings of the request in ``slot``, ending at ``end`` (perf_counter)."""
    first = slot.first_token_at or end
    decode_s = max(end - first, 1e-9)
    return Timings(
        queued_ms=(slot.started_at - job.enqueued_at) * 1000,
        prompt_ms=((slot.prompt_done_at or end) - slot.started_at) * 1000,
        ttft_ms=(first - job.enqueued_at) * 1000,
        decode_ms=decode_s * 1000,
        decode_tokens_per_s=max(slot.n_generated - 1, 0) / decode_s,
        draft_tokens=drafted,
        accepted_tokens=accepted,
        cache_disk_tokens=slot.n_disk_at_start,
        image_ms=slot.image_ms,
        image_tokens=slot.image_tokens,
    )
