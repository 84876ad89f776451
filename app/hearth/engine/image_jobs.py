"""The images of prompts: encoded beside the batched scheduler's loop, decoded inside it.

A prompt with images (``Job.media``) is prefilled like any other, in token chunks
(``batch.py`` stops a chunk at an image), until its next entry is an image. Then the
image goes through the vision encoder (``Projector.encode``) on a thread of its own,
while the scheduler goes on decoding every other slot's stream: an encode takes from
tenths of a second to seconds on a CPU, and llama-server, which encodes on its decoding
thread, stops every stream for that long. Once encoded, the embeddings go into the
slot's own sequence on the scheduler's thread, as a decode of their own
(``EmbeddingBatch``: a batch holds tokens or embeddings, never both), with causal
attention off where the model reads images bidirectionally. One image is encoded at a
time, the slots waiting at one taking turns.

An encode can't be interrupted: when its request ends meanwhile (cancelled, or the
model unloads), the embeddings are dropped, and the prompt's native chunks stay alive
until the encode is done with them (``projector.py``'s ``held``).

The slot's ``cached`` gets the image's stand-in ids (``ImageChunk.stand_in_ids``), so
the prefix cache finds the same picture in a follow-up turn and reuses it. An M-RoPE
image goes in at its grid of positions from the slot's ``n_past`` and moves that on by
its ``n_pos`` (``Slot.pos_shift`` keeps the difference). Everything but the encode runs
on the scheduler thread, which owns the context.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

from hearth.core.errors import HearthError
from hearth.engine.image_batch import EmbeddingBatch
from hearth.engine.media_prompt import ImageChunk, ImageEmbeddings
from hearth.engine.model import LlamaModel
from hearth.engine.projector import Projector
from hearth.engine.slots import Job, Slot

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImageDone:
    """An image decoded into ``slot``: where its prompt's last logits are, when it was
    the prompt's last part; or why it failed (the slot's request then ends)."""

    slot: Slot
    logits_index: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class _Encoding:
    """An encode in flight: for which request, at which image."""

    slot: Slot
    job: Job
    image: ImageChunk
    future: Future[tuple[ImageEmbeddings, float]]


class ImageDecoder:
    """Owns the embeddings batch and the encoder thread; the scheduler calls ``step``
    once per decode step, and waits on ``ready`` when only images are left to do."""

    def __init__(
        self,
        model: LlamaModel,
        projector: Projector,
        n_ubatch: int,
        wake: Callable[[], None] = lambda: None,
    ) -> None:
        self._model = model
        self._projector = projector
        self._batch = EmbeddingBatch(model.n_embd, n_ubatch, grid=projector.uses_mrope)
        self._thread: threading.Thread | None = None  # the encode in flight's
        self._wake = wake  # told when an encode ends, from the encoder thread
        self._encoding: _Encoding | None = None
        self._last_seq = -1  # the slot served last: the next one after it goes first

    @staticmethod
    def next_image(slot: Slot) -> ImageChunk | None:
        """The image ``slot``'s prompt continues with now, if it is at one."""
        job = slot.job
        if job is None or job.media is None or slot.pending_token is not None:
            return None
        if not slot.prefilling:
            return None
        return job.media.image_at(len(slot.cached))

    def encoding(self) -> bool:
        """Whether an encode was started and its embeddings are not in yet."""
        return self._encoding is not None

    def ready(self) -> bool:
        """Whether an encode has ended and its embeddings can go in."""
        return self._encoding is not None and self._encoding.future.done()

    def step(self, slots: Sequence[Slot]) -> ImageDone | None:
        """Decode the image whose encode has ended, if it still belongs to its request,
        and start encoding the next slot's (in turn) waiting at one."""
        done = None
        if self._encoding is not None:
            if not self._encoding.future.done():
                return None
            encoding, self._encoding = self._encoding, None
            done = self._finish(encoding)
        self._start(slots)
        return done

    def _start(self, slots: Sequence[Slot]) -> None:
        waiting = [s for s in slots if self.next_image(s) is not None]
        if not waiting:
            return
        slot = min(waiting, key=lambda s: (s.seq_id <= self._last_seq, s.seq_id))
        self._last_seq = slot.seq_id
        image = self.next_image(slot)
        assert image is not None and slot.job is not None
        future: Future[tuple[ImageEmbeddings, float]] = Future()
        future.add_done_callback(lambda _: self._wake())
        self._thread = threading.Thread(
            target=self._encode, args=(image, future), name="hearth-image-encoder", daemon=True
        )
        self._thread.start()
        self._encoding = _Encoding(slot, slot.job, image, future)

    def _encode(self, image: ImageChunk, future: Future[tuple[ImageEmbeddings, float]]) -> None:
        """The encoder thread: one picture, then the thread ends. A thread per picture,
        not a pool: llama.cpp's OpenMP gives each calling thread a team of its own, and
        while more such threads live than there are cores, libgomp makes every team's
        barriers sleep at once instead of spinning, the decode loop's too (4 streams
        of Gemma 3 270M on 2 cores: 118 tok/s before a first picture, 95 after it with
        a pool thread kept; bench/vision.py)."""
        future.set_running_or_notify_cancel()
        started = time.perf_counter()
        try:
            embeddings = self._projector.encode(image)
        except BaseException as exc:  # handed to the scheduler thread, which says why
            future.set_exception(exc)
            return
        future.set_result((embeddings, (time.perf_counter() - started) * 1000))

    def _finish(self, encoding: _Encoding) -> ImageDone | None:
        slot = encoding.slot
        if slot.job is not encoding.job or self.next_image(slot) is not encoding.image:
            return None  # the request ended while its image was encoded
        try:
            embeddings, encode_ms = encoding.future.result()
            return self._decode(slot, encoding.image, embeddings, encode_ms)
        except HearthError as exc:
            return ImageDone(slot, error=exc.message)
        except Exception as exc:  # a native failure must not take down the loop
            log.exception("slot %d: decoding an image failed", slot.seq_id)
            return ImageDone(slot, error=f"The image could not be read: {exc}")

    def _decode(
        self, slot: Slot, image: ImageChunk, embeddings: ImageEmbeddings, encode_ms: float
    ) -> ImageDone:
        started = time.perf_counter()
        pos = slot.n_past
        grid = self._projector.grid_positions(image, pos) if self._projector.uses_mrope else None
        last = len(slot.cached) + image.n_tokens >= slot.n_prompt
        self._batch.decode(
            self._model.ctx, embeddings, seq_id=slot.seq_id, pos=pos, grid=grid, logits_last=last
        )
        # the text after an M-RoPE image continues n_pos on, not n_tokens
        slot.keep(slot.cached + list(image.stand_in_ids()),
                  slot.pos_shift + image.n_pos - image.n_tokens)  # fmt: skip
        slot.image_ms += encode_ms
        slot.image_tokens += image.n_tokens
        log.debug("slot %d: image of %d tokens encoded in %.1f ms, decoded in %.1f ms",
                  slot.seq_id, image.n_tokens, encode_ms,
                  (time.perf_counter() - started) * 1000)  # fmt: skip
        return ImageDone(slot, self._batch.last_index(embeddings) if last else None)

    def free(self) -> None:
        """Wait for an encode in flight (its request is over), then free the batch."""
        if self._thread is not None:
            self._thread.join()
        self._encoding = None
        self._batch.free()
