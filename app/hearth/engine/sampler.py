"""A native llama.cpp sampler chain built from one request's SamplingParams.

The order follows llama.cpp's own default: logit bias, penalties, top-k, top-p, min-p,
temperature, then a seeded draw. Temperature 0 is a plain argmax, which is what makes
Hearth's greedy output identical to llama.cpp's.
"""

from __future__ import annotations

import ctypes
import random

import llama_cpp

from hearth.core.errors import InvalidRequestError
from hearth.core.sampling import SamplingParams

_NO_SEED = 0xFFFFFFFF  # LLAMA_DEFAULT_SEED: llama.cpp picks a random seed


class SamplerChain:
    """Owns a ``llama_sampler`` chain; free it when the request ends."""

    def __init__(
        self, params: SamplingParams, n_vocab: int, vocab: llama_cpp.llama_vocab_p
    ) -> None:
        self._chain = llama_cpp.llama_sampler_chain_init(
            llama_cpp.llama_sampler_chain_default_params()
        )
        try:
            self._build(params, n_vocab, vocab)
        except BaseException:
            llama_cpp.llama_sampler_free(self._chain)
            raise

    def _add(self, sampler: llama_cpp.llama_sampler_p) -> None:
        llama_cpp.llama_sampler_chain_add(self._chain, sampler)

    def _build(self, params: SamplingParams, n_vocab: int, vocab: llama_cpp.llama_vocab_p) -> None:
        if params.logit_bias:
            entries = (llama_cpp.llama_logit_bias * len(params.logit_bias))()
            for index, (token, bias) in enumerate(sorted(params.logit_bias.items())):
                if not 0 <= token < n_vocab:
                    raise InvalidRequestError(
                        f"logit_bias names token {token}, but the vocabulary has {n_vocab} tokens.",
                        param="logit_bias",
                    )
                entries[index] = llama_cpp.llama_logit_bias(token, bias)
            self._add(llama_cpp.llama_sampler_init_logit_bias(n_vocab, len(entries), entries))
        if params.grammar:
            grammar = llama_cpp.llama_sampler_init_grammar(vocab, params.grammar.encode(), b"root")
            if not grammar:
                raise InvalidRequestError("The grammar does not parse.", param="response_format")
            self._add(grammar)
        if (
            params.repeat_penalty != 1.0
            or params.frequency_penalty != 0.0
            or params.presence_penalty != 0.0
        ):
            self._add(
                llama_cpp.llama_sampler_init_penalties(
                    n_vocab,
                    params.repeat_last_n,
                    params.repeat_penalty,
                    params.frequency_penalty,
                    params.presence_penalty,
                )
            )
        if params.greedy:
            self._add(llama_cpp.llama_sampler_init_greedy())
            return
        if params.top_k > 0:
            self._add(llama_cpp.llama_sampler_init_top_k(params.top_k))
        if 0.0 < params.top_p < 1.0:
            self._add(llama_cpp.llama_sampler_init_top_p(params.top_p, 1))
        if params.min_p > 0.0:
            self._add(llama_cpp.llama_sampler_init_min_p(params.min_p, 1))
        self._add(llama_cpp.llama_sampler_init_temp(params.temperature))
        seed = params.seed if params.seed is not None else random.getrandbits(32)
        self._add(llama_cpp.llama_sampler_init_dist(seed & _NO_SEED))

    def sample(self, ctx: llama_cpp.llama_context_p, output_index: int) -> int:
        """Sample from the logits at ``output_index`` of the last decode, and accept."""
        return int(llama_cpp.llama_sampler_sample(self._chain, ctx, ctypes.c_int32(output_index)))

    def accept(self, token: int) -> None:
        """Feed prompt tokens to the penalty history without sampling."""
        llama_cpp.llama_sampler_accept(self._chain, token)

    def close(self) -> None:
        if self._chain is not None:
            llama_cpp.llama_sampler_free(self._chain)
            self._chain = None
