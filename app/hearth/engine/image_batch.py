"""Decoding an image's embeddings into one sequence of the context.

A ``llama_batch`` carries either token ids or embeddings, never both, so an image in a
prompt is its own decode between the text before it and after it: the embeddings
``Projector.encode`` made, at consecutive positions of the slot's sequence. Where the
model reads an image with bidirectional attention (``ImageEmbeddings.non_causal``,
Gemma 3), causal attention is off for that decode and the whole image must fit in one
micro-batch; otherwise it goes in pieces of the batch's capacity.

An M-RoPE model (Qwen2-VL and its successors) reads four positions per embedding, the
image's grid (``Projector.grid_positions``), laid out section by section over the
decode's tokens: ``pos`` then points at a buffer of this batch's own, four times the
capacity, and each piece of a split image gets its slice of every section.

Only the scheduler thread decodes on the generation context; this batch is its to own.
"""

from __future__ import annotations

import ctypes
import logging

import llama_cpp
import numpy as np
import numpy.typing as npt

from hearth.core.errors import EngineFailedError
from hearth.engine.media_prompt import ImageEmbeddings

log = logging.getLogger(__name__)

_FLOAT = ctypes.sizeof(ctypes.c_float)


class EmbeddingBatch:
    """Owns a ``llama_batch`` of ``capacity`` embeddings ``n_embd`` wide; ``free`` it.

    ``capacity`` should be the context's micro-batch size (``n_ubatch``): llama.cpp
    splits a larger decode into micro-batches, which a non-causal image cannot be.
    """

    def __init__(self, n_embd: int, capacity: int, *, grid: bool = False) -> None:
        self.n_embd = n_embd
        self.capacity = capacity
        self._batch = llama_cpp.llama_batch_init(capacity, n_embd, 1)
        # llama_batch_free frees the batch's own pos array: keep its address (a pointer
        # read from the struct would change with the field) to put back before then
        self._pos_type = type(self._batch.pos)
        self._own_pos = ctypes.cast(self._batch.pos, ctypes.c_void_p).value or 0
        self._grid_pos = (llama_cpp.llama_pos * (4 * capacity))() if grid else None
        if self._grid_pos is not None:
            self._batch.pos = ctypes.cast(self._grid_pos, self._pos_type)

    def decode(
        self,
        ctx: llama_cpp.llama_context_p,
        image: ImageEmbeddings,
        *,
        seq_id: int,
        pos: int,
        grid: npt.NDArray[np.int32] | None = None,
        logits_last: bool = False,
    ) -> None:
        """Decode ``image`` into ``seq_id`` at positions ``pos`` on, or with a grid
        batch at ``grid`` ([4, n_tokens], ``Projector.grid_positions``). With
        ``logits_last`` the image's last embedding gets logits (a prompt that ends in
        an image), at batch index ``last_index(image)``."""
        values = image.values
        n_tokens, width = (int(n) for n in values.shape)
        if width != self.n_embd:
            raise EngineFailedError(
                f"An image's embeddings are {width} wide; the model reads {self.n_embd}."
            )
        if image.non_causal and n_tokens > self.capacity:
            raise EngineFailedError(
                f"This model reads an image's {n_tokens} embeddings in one decode, but the "
                f"batch holds {self.capacity}. Load the model with a larger batch size."
            )
        if image.non_causal:
            llama_cpp.llama_set_causal_attn(ctx, False)
        try:
            for start in range(0, n_tokens, self.capacity):
                end = min(start + self.capacity, n_tokens)
                self._fill(values[start:end].tobytes(), start, end, seq_id)
                self._place(start, end, pos, grid)
                self._batch.logits[end - start - 1] = logits_last and end == n_tokens
                status = int(llama_cpp.llama_decode(ctx, self._batch))
                if status != 0:
                    raise EngineFailedError(f"llama.cpp could not decode an image ({status}).")
        finally:
            if image.non_causal:
                llama_cpp.llama_set_causal_attn(ctx, True)

    def last_index(self, image: ImageEmbeddings) -> int:
        """The batch index of an image's last embedding after ``decode``: where its
        logits are, for ``llama_get_logits_ith``."""
        return (len(image.values) - 1) % self.capacity

    def _place(self, start: int, end: int, pos: int, grid: npt.NDArray[np.int32] | None) -> None:
        """Positions for embeddings ``start:end`` of an image: consecutive from ``pos``,
        or the grid's columns, one section after another."""
        if (grid is None) != (self._grid_pos is None):
            raise EngineFailedError("An image's positions do not suit this model.")
        if grid is None or self._grid_pos is None:
            for i in range(end - start):
                self._batch.pos[i] = pos + start + i
            return
        piece = np.ascontiguousarray(grid[:, start:end], dtype=np.int32)
        ctypes.memmove(self._grid_pos, piece.ctypes.data, piece.nbytes)

    def _fill(self, data: bytes, start: int, end: int, seq_id: int) -> None:
        batch = self._batch
        ctypes.memmove(batch.embd, data, (end - start) * self.n_embd * _FLOAT)
        for i in range(end - start):
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = seq_id
            batch.logits[i] = False
        batch.n_tokens = end - start

    def free(self) -> None:
        self._batch.pos = ctypes.cast(self._own_pos, self._pos_type)
        llama_cpp.llama_batch_free(self._batch)
