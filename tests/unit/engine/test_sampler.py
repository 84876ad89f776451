"""The greedy fast path picks exactly what llama.cpp's logit-bias + greedy chain picks."""

from __future__ import annotations

import ctypes

import llama_cpp
import numpy as np
import pytest

from hearth.engine.sampler import GreedyArgmax

N_VOCAB = 4096


def native_pick(logits: np.ndarray, bias: dict[int, float]) -> int:
    """llama.cpp's own answer: its logit-bias and greedy samplers over a candidate array."""
    chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
    try:
        if bias:
            entries = (llama_cpp.llama_logit_bias * len(bias))(
                *(llama_cpp.llama_logit_bias(t, b) for t, b in bias.items())
            )
            sampler = llama_cpp.llama_sampler_init_logit_bias(logits.size, len(bias), entries)
            llama_cpp.llama_sampler_chain_add(chain, sampler)
        llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_greedy())
        data = (llama_cpp.llama_token_data * logits.size)(
            *(llama_cpp.llama_token_data(i, float(v), 0.0) for i, v in enumerate(logits))
        )
        array = llama_cpp.llama_token_data_array(data, logits.size, -1, False)
        llama_cpp.llama_sampler_apply(chain, ctypes.byref(array))
        return int(data[array.selected].id)
    finally:
        llama_cpp.llama_sampler_free(chain)


def fast_pick(logits: np.ndarray, bias: dict[int, float]) -> int:
    """The fast path's answer, the native chain's where it defers (as SamplerChain does)."""
    token = GreedyArgmax(bias, logits.size).pick(logits)
    return native_pick(logits, bias) if token is None else token


def random_logits(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, 4.0, N_VOCAB).astype(np.float32)


@pytest.mark.parametrize("seed", range(40))
def test_random_logits_and_biases(seed: int) -> None:
    logits = random_logits(seed)
    rng = np.random.default_rng(1000 + seed)
    tokens = rng.choice(N_VOCAB, size=int(rng.integers(0, 6)), replace=False)
    bias = {int(t): float(rng.choice([-100.0, -3.5, 0.0, 2.25, 9.0])) for t in tokens}
    assert fast_pick(logits, bias) == native_pick(logits, bias)


def test_ties_go_to_the_lowest_id() -> None:
    logits = np.zeros(N_VOCAB, dtype=np.float32)
    logits[[7, 300, 2000]] = 5.0
    assert fast_pick(logits, {}) == native_pick(logits, {}) == 7
    # A bias lifting a later token exactly to the maximum does not beat an earlier one...
    logits[900] = 4.0
    assert fast_pick(logits, {900: 1.0}) == native_pick(logits, {900: 1.0}) == 7
    # ...but a biased token tied with the maximum at a lower id wins.
    logits[3] = 4.0
    assert fast_pick(logits, {3: 1.0}) == native_pick(logits, {3: 1.0}) == 3


def test_a_banned_top_token_defers_to_the_chain_and_agrees() -> None:
    logits = random_logits(1)
    top = int(logits.argmax())
    assert GreedyArgmax({top: -100.0}, N_VOCAB).pick(logits) is None
    assert fast_pick(logits, {top: -100.0}) == native_pick(logits, {top: -100.0}) != top


def test_a_promoted_token_wins() -> None:
    logits = random_logits(2)
    token = int(logits.argmin())
    assert fast_pick(logits, {token: 100.0}) == native_pick(logits, {token: 100.0}) == token


def test_float32_rounding_of_the_bias_matches() -> None:
    # 0.1 is not exact in float32: the sum must round as llama.cpp's float addition does.
    logits = np.zeros(N_VOCAB, dtype=np.float32)
    logits[10] = np.float32(1.1)
    logits[5] = np.float32(1.0)
    assert fast_pick(logits, {5: 0.1}) == native_pick(logits, {5: 0.1})


def test_nan_defers_to_the_chain() -> None:
    logits = random_logits(3)
    logits[100] = np.nan
    assert GreedyArgmax({}, N_VOCAB).pick(logits) is None
