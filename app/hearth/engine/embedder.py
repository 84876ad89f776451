"""Embeddings from the loaded model, on a second llama context of its own.

A separate context (same weights, embedding mode, mean pooling unless the model names
another) keeps embedding requests out of the generation slots' KV caches. It is used
from one thread at a time under a lock; llama.cpp allows separate contexts of one model
on separate threads.
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass

import llama_cpp

from hearth.core.errors import ContextOverflowError, EngineFailedError, InvalidRequestError
from hearth.engine.backend import resolve_threads
from hearth.engine.model import LlamaModel

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Embeddings:
    vectors: list[list[float]]
    prompt_tokens: int


class Embedder:
    def __init__(self, model: LlamaModel, *, n_ctx: int) -> None:
        self._model = model
        self._lock = threading.Lock()
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = n_ctx
        params.n_ubatch = n_ctx  # pooled embeddings need the whole input in one ubatch
        params.n_seq_max = 1
        params.embeddings = True
        params.n_threads = resolve_threads(model.config.n_threads)
        params.n_threads_batch = resolve_threads(
            model.config.n_threads_batch or model.config.n_threads
        )
        params.no_perf = True
        ctx = llama_cpp.llama_init_from_model(model.model, params)
        if not ctx:
            raise EngineFailedError("llama.cpp could not create an embedding context.")
        if llama_cpp.llama_pooling_type(ctx) == llama_cpp.LLAMA_POOLING_TYPE_NONE:
            llama_cpp.llama_free(ctx)
            params.pooling_type = llama_cpp.LLAMA_POOLING_TYPE_MEAN
            ctx = llama_cpp.llama_init_from_model(model.model, params)
            if not ctx:
                raise EngineFailedError("llama.cpp could not create an embedding context.")
        self._ctx = ctx
        self._n_ctx = n_ctx
        self._n_embd = int(llama_cpp.llama_model_n_embd(model.model))
        self._encoder = bool(llama_cpp.llama_model_has_encoder(model.model))
        self._batch = llama_cpp.llama_batch_init(n_ctx, 0, 1)
        self._closed = False

    def embed(self, texts: list[str]) -> Embeddings:
        """Blocking: run it in a worker thread. Vectors are L2-normalised, as OpenAI's."""
        if not texts:
            raise InvalidRequestError("input must not be empty.", param="input")
        with self._lock:  # close() waits for this, and the model outlives the embedder
            if self._closed:
                raise EngineFailedError("The model was unloaded; retry the request.")
            tokenized = [
                self._model.tokenize(text, add_special=True, parse_special=False) for text in texts
            ]
            for tokens in tokenized:
                if not tokens:
                    raise InvalidRequestError("An input is empty.", param="input")
                if len(tokens) > self._n_ctx:
                    raise ContextOverflowError(len(tokens), 0, self._n_ctx)
            vectors = [self._embed_one(tokens) for tokens in tokenized]
        return Embeddings(vectors, sum(len(t) for t in tokenized))

    def _embed_one(self, tokens: list[int]) -> list[float]:
        memory = llama_cpp.llama_get_memory(self._ctx)
        if memory:
            llama_cpp.llama_memory_clear(memory, True)
        batch = self._batch
        for i, token in enumerate(tokens):
            batch.token[i] = token
            batch.pos[i] = i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = True
        batch.n_tokens = len(tokens)
        run = llama_cpp.llama_encode if self._encoder else llama_cpp.llama_decode
        if run(self._ctx, batch) != 0:
            raise EngineFailedError("llama.cpp failed to compute the embedding.")
        pointer = llama_cpp.llama_get_embeddings_seq(self._ctx, 0)
        if not pointer:
            raise EngineFailedError("This model produced no pooled embedding.")
        vector = [float(pointer[i]) for i in range(self._n_embd)]
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            llama_cpp.llama_batch_free(self._batch)
            llama_cpp.llama_free(self._ctx)
