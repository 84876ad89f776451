"""Decoding an image's embeddings into one sequence of the context.

A ``llama_batch`` carries either token ids or embeddings, never both, so an image in a
prompt is its own decode between the text before it and after it: the embeddings
``Projector.encode`` made, at consecutive positions of the slot's sequence. Where the
model reads an image with bidirectional attention (``ImageEmbeddings.non_causal``,
Gemma 3), causal attention is off for that decode and the whole image must fit in one
micro-batch; otherwise it goes in pieces of the batch's capacity.

Only the scheduler thread decodes on the generation context; this batch is its to own.
"""

from __future__ import annotations

import ctypes
import logging

import llama_cpp

from hearth.core.errors import EngineFailedError
from hearth.engine.media_prompt import ImageEmbeddings

log = logging.getLogger(__name__)

_FLOAT = ctypes.sizeof(ctypes.c_float)


class EmbeddingBatch:
    """Owns a ``llama_batch`` of ``capacity`` embeddings ``n_embd`` wide; ``free`` it.

    ``capacity`` should be the context's micro-batch size (``n_ubatch``): llama.cpp
    splits a larger decode into micro-batches, which a non-causal image cannot be.
    """

    def __init__(self, n_embd: int, capacity: int) -> None:
        self.n_embd = n_embd
        self.capacity = capacity
        self._batch = llama_cpp.llama_batch_init(capacity, n_embd, 1)

    def decode(
        self,
        ctx: llama_cpp.llama_context_p,
        image: ImageEmbeddings,
        *,
        seq_id: int,
        pos: int,
        logits_last: bool = False,
    ) -> int:
        """Decode ``image`` into ``seq_id`` from position ``pos``; returns the position
        after it. With ``logits_last`` the image's last embedding gets logits (a prompt
        that ends in an image), at batch index ``last_index(image)``."""
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
                self._fill(values[start:end].tobytes(), start, end, seq_id, pos)
                self._batch.logits[end - start - 1] = logits_last and end == n_tokens
                status = int(llama_cpp.llama_decode(ctx, self._batch))
                if status != 0:
                    raise EngineFailedError(f"llama.cpp could not decode an image ({status}).")
        finally:
            if image.non_causal:
                llama_cpp.llama_set_causal_attn(ctx, True)
        return pos + n_tokens

    def last_index(self, image: ImageEmbeddings) -> int:
        """The batch index of an image's last embedding after ``decode``: where its
        logits are, for ``llama_get_logits_ith``."""
        return (len(image.values) - 1) % self.capacity

    def _fill(self, data: bytes, start: int, end: int, seq_id: int, pos: int) -> None:
        batch = self._batch
        ctypes.memmove(batch.embd, data, (end - start) * self.n_embd * _FLOAT)
        for i in range(end - start):
            batch.pos[i] = pos + start + i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = seq_id
            batch.logits[i] = False
        batch.n_tokens = end - start

    def free(self) -> None:
        llama_cpp.llama_batch_free(self._batch)
