"""The images of prompts, decoded inside the batched scheduler's loop.

A prompt with images (``Job.media``) is prefilled like any other, in token chunks
(``batch.py`` stops a chunk at an image), until its next entry is an image. Then the
image goes through the vision encoder (``Projector.encode``) and its embeddings into
the slot's own sequence as a decode of their own (``EmbeddingBatch``: a batch holds
tokens or embeddings, never both), with causal attention off where the model reads
images bidirectionally. One image per scheduler step, the slots waiting at one taking
turns, and the step's text decode follows it, so the other slots' streams keep
producing a token per step while a request with many images is read.

The slot's ``cached`` gets the image's stand-in ids (``ImageChunk.stand_in_ids``), so
the prefix cache finds the same picture in a follow-up turn and reuses it. An M-RoPE
image goes in at its grid of positions from the slot's ``n_past`` and moves that on by
its ``n_pos`` (``Slot.pos_shift`` keeps the difference). Runs on the
scheduler thread only, which owns the context.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from hearth.core.errors import HearthError
from hearth.engine.image_batch import EmbeddingBatch
from hearth.engine.media_prompt import ImageChunk
from hearth.engine.model import LlamaModel
from hearth.engine.projector import Projector
from hearth.engine.slots import Slot

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImageDone:
    """An image decoded into ``slot``: where its prompt's last logits are, when it was
    the prompt's last part; or why it failed (the slot's request then ends)."""

    slot: Slot
    logits_index: int | None = None
    error: str | None = None


class ImageDecoder:
    """Owns the embeddings batch; the scheduler calls ``step`` once per decode step."""

    def __init__(self, model: LlamaModel, projector: Projector, n_ubatch: int) -> None:
        self._model = model
        self._projector = projector
        self._batch = EmbeddingBatch(model.n_embd, n_ubatch, grid=projector.uses_mrope)
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

    def step(self, slots: Sequence[Slot]) -> ImageDone | None:
        """Encode and decode one image, of the next slot (in turn) waiting at one."""
        waiting = [s for s in slots if self.next_image(s) is not None]
        if not waiting:
            return None
        slot = min(waiting, key=lambda s: (s.seq_id <= self._last_seq, s.seq_id))
        self._last_seq = slot.seq_id
        image = self.next_image(slot)
        assert image is not None
        try:
            return self._decode(slot, image)
        except HearthError as exc:
            return ImageDone(slot, error=exc.message)
        except Exception as exc:  # a native failure must not take down the loop
            log.exception("slot %d: decoding an image failed", slot.seq_id)
            return ImageDone(slot, error=f"The image could not be read: {exc}")

    def _decode(self, slot: Slot, image: ImageChunk) -> ImageDone:
        started = time.perf_counter()
        embeddings = self._projector.encode(image)
        encoded = time.perf_counter()
        pos = slot.n_past
        grid = self._projector.grid_positions(image, pos) if self._projector.uses_mrope else None
        last = len(slot.cached) + image.n_tokens >= slot.n_prompt
        self._batch.decode(
            self._model.ctx, embeddings, seq_id=slot.seq_id, pos=pos, grid=grid, logits_last=last
        )
        # the text after an M-RoPE image continues n_pos on, not n_tokens
        slot.keep(slot.cached + list(image.stand_in_ids()),
                  slot.pos_shift + image.n_pos - image.n_tokens)  # fmt: skip
        slot.image_ms += (encoded - started) * 1000
        slot.image_tokens += image.n_tokens
        log.debug("slot %d: image of %d tokens encoded in %.1f ms, decoded in %.1f ms",
                  slot.seq_id, image.n_tokens, (encoded - started) * 1000,
                  (time.perf_counter() - encoded) * 1000)  # fmt: skip
        return ImageDone(slot, self._batch.last_index(embeddings) if last else None)

    def free(self) -> None:
        self._batch.free()
