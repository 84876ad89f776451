"""The batch loop: one thread owns the llama context and serves every slot.

Each step builds a single ``llama_batch`` (batch.py) holding one token for every decoding
slot and equal prompt chunks for prefilling slots (bounded by ``n_ubatch`` while streams
are decoding, so a long prompt never stalls them for long, and by ``n_batch`` otherwise),
decodes it once, then samples each slot with its own chain.
Requests join and leave between steps: continuous batching; a joining request's slot is
readied (KV reuse, prompt-cache restore, sampler) by slot_start.py.
A decoding slot may bring drafted tokens (speculative.py): they are verified in the same
decode, kept while the slot's own sampling agrees, and the rest trimmed from the KV cache.
Events for clients leave through an outbox (outbox.py) as the next decode starts.
"""

from __future__ import annotations

import collections
import logging
import threading
import time

import llama_cpp

from hearth.core.errors import QueueFullError
from hearth.core.generation import Finished, FinishReason, TextDelta, Timings
from hearth.engine.arrivals import Arrivals
from hearth.engine.batch import BatchBuilder
from hearth.engine.image_jobs import ImageDecoder
from hearth.engine.logprobs import read_logits, token_logprob
from hearth.engine.model import LlamaModel
from hearth.engine.outbox import EventOutbox
from hearth.engine.placement import Placement, place
from hearth.engine.projector import Projector
from hearth.engine.prompt_cache import PromptCache
from hearth.engine.rate import DecodeRate
from hearth.engine.scheduler_status import (
    CompletedRequest,
    SchedulerStatus,
    SlotStatus,
    decode_error,
    empty_usage,
    slot_timings,
)
from hearth.engine.slot_start import start_job
from hearth.engine.slots import Job, Slot
from hearth.engine.speculative import Speculator
from hearth.engine.token_reuse import TokenMemo, known_generation

__all__ = ["CompletedRequest", "Scheduler", "SchedulerStatus", "SlotStatus"]

log = logging.getLogger(__name__)


class Scheduler:
    """Owns the decode loop thread; ``submit`` and ``cancel`` are safe from any thread."""

    def __init__(
        self,
        model: LlamaModel,
        *,
        max_queue: int = 64,
        arrivals: Arrivals | None = None,
        rate: DecodeRate | None = None,
        speculator: Speculator | None = None,
        memo: TokenMemo | None = None,
        disk: PromptCache | None = None,
        projector: Projector | None = None,
    ) -> None:
        self._model = model
        self._disk = disk  # prompts saved to and restored from disk; closed in stop()
        self._memo = memo  # finished generations go here, for the next turn's tokenizing
        self._spec = speculator or Speculator(model.n_slots)  # owned: closed in stop()
        self._arrivals = arrivals or Arrivals()
        self._keep_adjacent = not model.config.kv_unified
        self._max_queue = max_queue
        # What the context really took: llama.cpp caps n_batch at the total context.
        self._n_batch = int(llama_cpp.llama_n_batch(model.ctx))
        self._n_ubatch = int(llama_cpp.llama_n_ubatch(model.ctx))
        self._slots = [Slot(seq_id=i) for i in range(model.n_slots)]  # index = seq id
        if disk is not None:  # prompt cache: what the slots hold is not read from disk
            disk.watch(self._slots)
        self._queue: collections.deque[Job] = collections.deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._stop_reason: str | None = None
        self._batch = BatchBuilder(self._n_batch)
        # images in prompts (image_jobs.py); the projector is the engine's to close
        self._images = (
            ImageDecoder(model, projector, self._n_ubatch, wake=self._wake) if projector else None
        )
        self._rate = rate if rate is not None else DecodeRate()  # trimmed as steps come
        self._completed: collections.deque[CompletedRequest] = collections.deque(maxlen=200)
        self._outbox = EventOutbox()  # events leave as the next decode starts
        self._thread = threading.Thread(target=self._run, name="hearth-scheduler", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ public API
    def submit(self, job: Job) -> None:
        with self._cond:
            if self._stopping:
                raise QueueFullError("The model is being unloaded; try again shortly.")
            idle = sum(1 for slot in self._slots if slot.job is None)
            if len(self._queue) - idle >= self._max_queue:
                raise QueueFullError(
                    f"All {len(self._slots)} slots are busy and {len(self._queue)} requests "
                    "are already waiting. Retry shortly."
                )
            self._queue.append(job)
            self._cond.notify()

    def cancel(self, job: Job) -> None:
        job.cancelled.set()
        with self._cond:
            self._cond.notify()

    def status(self) -> SchedulerStatus:
        with self._cond:
            slots = tuple(SlotStatus(s.seq_id, s.busy, len(s.cached)) for s in self._slots)
            depth = len(self._queue)
        rate = self._rate.tokens_per_s(time.perf_counter())
        spec = self._spec
        return SchedulerStatus(slots, depth, rate, spec.drafted_total, spec.accepted_total)

    def completed(self, limit: int = 50) -> list[CompletedRequest]:
        """The most recent finished generations, newest first."""
        return list(self._completed)[-limit:][::-1]

    def stop(self, reason: str | None = None) -> None:
        """Stop the thread and free native memory. Every running or queued job ends: as
        an error saying ``reason`` when the model goes away under it (a swap, an unload),
        so a client never mistakes a cut-off answer for a finished one; as cancelled
        otherwise."""
        with self._cond:
            self._stop_reason = reason
            self._stopping = True
            self._cond.notify_all()
        self._thread.join()
        if self._disk is not None:  # the slots were saved on the way out (_shutdown)
            self._disk.close()
        self._outbox.close()
        self._spec.close()
        self._batch.free()
        if self._images is not None:
            self._images.free()

    # ------------------------------------------------------------------ loop
    def _run(self) -> None:
        while True:
            if not self._any_busy():  # no decode comes next to hand the events over
                self._outbox.flush()
            with self._cond:
                while not self._stopping and not self._queue and not self._any_busy():
                    self._cond.wait()
                if self._stopping:
                    break
            was_idle = not self._any_busy()
            if self._admit():
                self._outbox.flush()  # the wait for more arrivals must not hold up tokens
                self._arrivals.gather(self._admit, self._all_busy, was_idle)
            self._drop_cancelled()
            if not self._any_busy():
                continue
            try:
                self._step()
            except Exception:
                log.exception("decode step failed")
                self._fail_running("The engine failed while generating; see the worker log.")
        self._shutdown()

    def _any_busy(self) -> bool:
        return any(s.busy for s in self._slots)

    def _all_busy(self) -> bool:
        return all(s.busy for s in self._slots)

    def _admit(self) -> int:
        """Start queued jobs in idle slots, one at a time so each placement sees the last."""
        started = 0
        while True:
            with self._cond:
                if not self._queue or self._all_busy():
                    return started
                job = self._queue.popleft()
            if job.cancelled.is_set():
                self._outbox.post(job, Finished(FinishReason.CANCELLED, empty_usage(job)))
                continue
            # Slots change only on this thread, so placement needs no lock (and a long
            # prompt would otherwise hold up submit() on the event loop).
            placement = place(self._slots, job.tokens, keep_adjacent=self._keep_adjacent)
            with self._cond:
                placement.slot.job = job
            self._start(placement, job)
            started += 1

    def _start(self, placement: Placement, job: Job) -> None:
        error = start_job(self._model, self._slots, placement, job, spec=self._spec,
                          disk=self._disk)  # fmt: skip
        if error is not None:
            self._finish(placement.slot, FinishReason.ERROR, error=error)

    def _drop_cancelled(self) -> None:
        for slot in self._slots:
            if slot.job is not None and slot.job.cancelled.is_set():
                self._finish(slot, FinishReason.CANCELLED)

    def _step(self) -> None:
        """One decode over every busy slot (batch.py), then sampling and verification;
        before it, the image of a prompt whose encode has ended (image_jobs.py)."""
        if self._images is not None:
            self._image_step()
        running = [s for s in self._slots if s.pending_token is not None]
        if any(s.n_generated == 1 for s in running):  # a draft model may have a whole
            self._outbox.flush()  # prompt to catch up first: the first token goes out now
        decoding = len(running)
        room = self._n_batch - decoding
        drafts = self._spec.plan(running, room, self._model.n_ctx_per_slot)
        decoding += sum(len(d) for d in drafts.values())
        # Running streams wait for the whole step: bound their stall to one micro-batch.
        # With none running, simultaneous prompts are prefilled together, up to n_batch.
        budget = (self._n_ubatch if decoding else self._n_batch) - decoding
        step = self._batch.fill(self._slots, drafts, budget)
        if not step.n_tokens:  # every busy slot waits at an image
            self._wait_for_image()
            return
        self._outbox.flush()  # the relay and the event loop work while this decode runs
        started = time.perf_counter()
        result = llama_cpp.llama_decode(self._model.ctx, self._batch.batch)
        if result != 0:
            for slot, _ in step.chunks:
                self._finish(slot, FinishReason.ERROR, error=decode_error(result))
                llama_cpp.llama_memory_seq_rm(self._model.memory, slot.seq_id, -1, -1)
                slot.keep([])
            return
        for slot, piece in step.chunks:
            slot.cached.extend(piece)
            slot.pending_token = None
            if len(slot.cached) == slot.checkpoint and self._disk:  # prompt cache: mid-prompt
                self._disk.after_prompt(slot)
        now = time.perf_counter()
        if len(step.chunks) == len(running):  # decode only: a sample for the cost fit
            self._spec.record_step(step.n_tokens, now - started)
        produced = sum(self._verify(slot, i, draft, now) for slot, i, draft in step.outputs)
        self._rate.record(now, produced)

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify()

    def _wait_for_image(self) -> None:
        """Every busy slot waits at an image: sleep until its encode ends, a request
        arrives for an idle slot, one is cancelled, or the model goes."""
        images = self._images
        assert images is not None
        self._outbox.flush()
        with self._cond:
            self._cond.wait_for(
                lambda: self._stopping
                or not images.encoding()
                or images.ready()
                or bool(self._queue and not self._all_busy())
                or any(s.job is not None and s.job.cancelled.is_set() for s in self._slots),
                timeout=0.5,  # a client gone in Job.emit sets ``cancelled`` with no notify
            )

    def _image_step(self) -> None:
        assert self._images is not None
        done = self._images.step(self._slots)
        if done is None:
            return
        slot = done.slot
        if done.error is not None:
            self._finish(slot, FinishReason.ERROR, error=done.error)
            llama_cpp.llama_memory_seq_rm(self._model.memory, slot.seq_id, slot.n_past, -1)
        elif done.logits_index is not None:  # the prompt ended with the image
            now = time.perf_counter()
            self._rate.record(now, self._verify(slot, done.logits_index, [], now))

    def _verify(self, slot: Slot, index: int, draft: list[int], now: float) -> int:
        """Sample the slot at ``index`` and, while the samples equal the drafts, at the
        drafted positions after it: exactly the tokens plain decoding would give. The
        rejected tail leaves the KV cache. Returns the number of tokens sampled."""
        if slot.prompt_done_at == 0.0:
            slot.prompt_done_at = now
            if self._disk is not None:  # prompt cache: save a long prompt's state
                self._disk.after_prompt(slot)
        produced = 0
        for i in range(len(draft) + 1):
            token = self._sample(slot, index + i)
            self._accept_token(slot, token, now)
            produced += 1
            if slot.job is None or i == len(draft) or token != draft[i]:
                break
            slot.cached.append(token)  # verified: its KV entry stays
        if draft:
            llama_cpp.llama_memory_seq_rm(self._model.memory, slot.seq_id, slot.n_past, -1)
            self._spec.record(slot.seq_id, len(draft), produced - 1)
        return produced

    def _sample(self, slot: Slot, index: int) -> int:
        assert slot.sampler is not None
        wanted = slot.job.params.logprobs if slot.job else None
        logits = read_logits(self._model, index) if wanted is not None else None
        token = slot.sampler.sample(self._model.ctx, index)
        if logits is not None and wanted is not None:
            slot.pending_logprobs.append(token_logprob(self._model, logits, token, wanted))
        return token

    def _accept_token(self, slot: Slot, token: int, now: float) -> None:
        assert slot.job is not None and slot.stream is not None
        if slot.first_token_at == 0.0:
            slot.first_token_at = now
        if self._model.is_eog(token):
            self._finish(slot, FinishReason.STOP)
            return
        slot.n_generated += 1
        keep = token in slot.job.params.preserved_tokens  # markers the reply is parsed by
        piece = self._model.token_bytes(token, special=keep)
        slot.generated.append(token)
        slot.pieces.append(piece)
        text = slot.stream.feed(piece)
        if text:
            self._outbox.post(slot.job, TextDelta(text, slot.take_logprobs()))
        max_tokens = slot.job.params.max_tokens
        hit_max = max_tokens is not None and slot.n_generated >= max_tokens
        context_full = len(slot.cached) + 1 >= self._model.n_ctx_per_slot
        if slot.stream.stopped:
            self._finish(slot, FinishReason.STOP)
        elif hit_max or context_full:
            self._finish(slot, FinishReason.LENGTH)
        else:
            slot.pending_token = token

    def _finish(self, slot: Slot, reason: FinishReason, error: str | None = None) -> None:
        job = slot.job
        if job is None:
            return
        stream = slot.stream
        ended_normally = reason in (FinishReason.STOP, FinishReason.LENGTH)
        if ended_normally and stream is not None and not stream.stopped:
            tail = stream.finish()
            if tail or slot.pending_logprobs:
                self._outbox.post(job, TextDelta(tail, slot.take_logprobs()))
        if ended_normally and self._memo is not None and job.text is not None:
            self._memo.record(
                known_generation(job.text, job.add_special, job.tokens, slot.generated, slot.pieces)
            )
        end = time.perf_counter()
        stop = stream.stop_hit if stream is not None else None
        timings = self._timings(slot, job, end)
        finished = Finished(reason, slot.usage(), timings, error, stop_sequence=stop)
        self._completed.append(
            CompletedRequest(time.time(), reason, finished.usage, finished.timings)
        )
        if slot.sampler is not None:
            slot.sampler.close()
        slot.sampler = None
        slot.stream = None
        slot.pending_token = None
        slot.last_used = end
        with self._cond:
            slot.job = None  # free before the client hears, so status is never stale
        self._outbox.post(job, finished)

    def _timings(self, slot: Slot, job: Job, end: float) -> Timings:
        return slot_timings(slot, job, end, *self._spec.counts(slot.seq_id))

    def _fail_running(self, message: str) -> None:
        for slot in self._slots:
            if slot.job is not None:
                self._finish(slot, FinishReason.ERROR, error=message)
                llama_cpp.llama_memory_seq_rm(self._model.memory, slot.seq_id, -1, -1)
                slot.keep([])

    def _shutdown(self) -> None:
        reason = self._stop_reason
        ending = FinishReason.CANCELLED if reason is None else FinishReason.ERROR
        if self._disk is not None:  # prompt cache: what the slots hold outlives the load
            self._disk.save_all(self._slots)
        for slot in self._slots:
            self._finish(slot, ending, error=reason)
        with self._cond:
            queued = list(self._queue)
            self._queue.clear()
        for job in queued:
            self._outbox.post(job, Finished(ending, empty_usage(job), error=reason))
        self._outbox.flush()
