"""A native llama.cpp sampler chain built from one request's SamplingParams.

The order follows llama.cpp's own default: logit bias, penalties, top-k, top-p, min-p,
temperature, then a seeded draw. Temperature 0 is a plain argmax, which is what makes
Hearth's greedy output identical to llama.cpp's.

Plain greedy requests (no grammar, no penalties) skip the chain: ``llama_sampler_sample``
first writes a candidate for every token of the vocabulary, 3 MiB per token for a 262k
vocabulary (Gemma 3), which cost 0.3-0.46 ms of CPU a token on the dev machine against
0.02-0.04 ms for a numpy argmax over the logits in place (``GreedyArgmax``), on the
critical path between two decodes (bench/sampler_cost.py). Same token: the first of the
highest biased logits.
"""

from __future__ import annotations

import ctypes
import math
import random
from collections.abc import Mapping

import llama_cpp
import numpy as np

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
        finite = all(math.isfinite(b) for b in params.logit_bias.values())
        plain = not params.grammar and not _penalised(params) and finite
        self._argmax = GreedyArgmax(params.logit_bias, n_vocab) if params.greedy and plain else None

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
        if _penalised(params):
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
        """Sample from the logits at ``output_index`` of the last decode, and accept
        (for plain greedy, accepting changes nothing: neither sampler keeps state)."""
        if self._argmax is not None:
            token = self._argmax.sample(ctx, output_index)
            if token is not None:
                return token
        return int(llama_cpp.llama_sampler_sample(self._chain, ctx, ctypes.c_int32(output_index)))

    def accept(self, token: int) -> None:
        """Feed prompt tokens to the penalty history without sampling."""
        llama_cpp.llama_sampler_accept(self._chain, token)

    def close(self) -> None:
        if self._chain is not None:
            llama_cpp.llama_sampler_free(self._chain)
            self._chain = None


def _penalised(params: SamplingParams) -> bool:
    return (
        params.repeat_penalty != 1.0
        or params.frequency_penalty != 0.0
        or params.presence_penalty != 0.0
    )


class GreedyArgmax:
    """What llama.cpp's logit-bias and greedy samplers pick, read from the logits in place.

    The greedy sampler keeps the first token with the highest logit (a strict ``>``
    scan), after the bias was added in float32. ``numpy.argmax`` also returns the first
    maximum, so over the raw logits it gives the best unbiased token; a biased token
    wins if its biased logit is higher, or equal at a lower id. When the raw best is
    itself biased (a banned end-of-generation token on top), or a logit is NaN, this
    returns None and the native chain decides: rare, and exact by construction. Biases
    must be finite (the chain keeps requests with others).
    """

    def __init__(self, logit_bias: Mapping[int, float], n_vocab: int) -> None:
        tokens = sorted(logit_bias)
        self._biased = frozenset(tokens)
        self._tokens = np.array(tokens, dtype=np.int64)
        self._biases = np.array([logit_bias[t] for t in tokens], dtype=np.float32)
        self._row = ctypes.c_float * n_vocab

    def sample(self, ctx: llama_cpp.llama_context_p, output_index: int) -> int | None:
        pointer = llama_cpp.llama_get_logits_ith(ctx, ctypes.c_int32(output_index))
        address = ctypes.cast(pointer, ctypes.c_void_p).value
        if not address:
            return None
        logits = np.frombuffer(memoryview(self._row.from_address(address)), dtype=np.float32)
        return self.pick(logits)

    def pick(self, logits: np.ndarray) -> int | None:
        """The greedy token for these raw logits, or None to defer to the native chain."""
        best = int(logits.argmax())
        top = logits[best]
        if np.isnan(top) or best in self._biased:  # NaN, or the bias may move the maximum
            return None
        if not self._biased:
            return best
        values = logits[self._tokens] + self._biases  # float32, as llama.cpp adds them
        i = int(values.argmax())  # ids are sorted: the lowest id among equal values
        value, token = values[i], int(self._tokens[i])
        if value > top or (value == top and token < best):
            return token
        return best
