"""CPU time of one greedy sample on a real vocabulary: llama.cpp's chain against Hearth's.

    .venv/bin/python bench/sampler_cost.py [--model M.gguf] [--calls 300]

Loads the model (default: Gemma 3 270M, 262k tokens; real_model.py), decodes a short
prompt once, then samples its logits ``--calls`` times each way, with the end-of-
generation tokens banned through logit_bias as the benchmarks do: the native chain
(``llama_sampler_sample``: a candidate per vocabulary token, then logit bias and greedy)
and ``SamplerChain``'s plain-greedy path (``GreedyArgmax``: numpy's argmax over the
logits in place). Prints the CPU time per call of this thread (``time.thread_time``,
steadier than wall time on a busy machine) and checks that both pick the same token.
The sample sits between two decodes, on every token's critical path.
"""

from __future__ import annotations

import argparse
import ctypes
import time
from collections.abc import Callable
from pathlib import Path

import llama_cpp

from hearth.core.sampling import SamplingParams
from hearth.engine.sampler import SamplerChain
from real_model import ensure_real_model

_QUIET = llama_cpp.llama_log_callback(lambda _level, _text, _data: None)


def per_call(sample: Callable[[], int], calls: int) -> tuple[int, float]:
    """The token and the CPU microseconds per call."""
    token = sample()
    started = time.thread_time()
    for _ in range(calls):
        sample()
    return token, (time.thread_time() - started) / calls * 1e6


def native_chain(bias: dict[int, float], n_vocab: int) -> llama_cpp.llama_sampler_p:
    chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
    entries = (llama_cpp.llama_logit_bias * len(bias))(
        *(llama_cpp.llama_logit_bias(t, b) for t, b in bias.items())
    )
    sampler = llama_cpp.llama_sampler_init_logit_bias(n_vocab, len(bias), entries)
    llama_cpp.llama_sampler_chain_add(chain, sampler)
    llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_greedy())
    return chain


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", type=Path)
    p.add_argument("--calls", type=int, default=300)
    args = p.parse_args()
    llama_cpp.llama_log_set(_QUIET, None)
    llama_cpp.llama_backend_init()
    path = args.model or ensure_real_model()
    model = llama_cpp.llama_model_load_from_file(
        str(path).encode(), llama_cpp.llama_model_default_params()
    )
    params = llama_cpp.llama_context_default_params()
    params.n_ctx, params.n_threads, params.n_threads_batch = 512, 2, 2
    ctx = llama_cpp.llama_init_from_model(model, params)
    vocab = llama_cpp.llama_model_get_vocab(model)
    n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
    text = b"The quick brown fox jumps over the lazy dog, and then"
    tokens = (llama_cpp.llama_token * 64)()
    n = llama_cpp.llama_tokenize(vocab, text, len(text), tokens, 64, True, False)
    if llama_cpp.llama_decode(ctx, llama_cpp.llama_batch_get_one(tokens, n)) != 0:
        raise RuntimeError("decode failed")
    bias = {t: -100.0 for t in range(n_vocab) if llama_cpp.llama_vocab_is_eog(vocab, t)}
    greedy = SamplingParams(temperature=0.0, logit_bias=bias)
    fast = SamplerChain(greedy, n_vocab, vocab)
    chain = native_chain(bias, n_vocab)  # what SamplerChain built before the fast path
    index = ctypes.c_int32(-1)
    chain_token, chain_us = per_call(
        lambda: int(llama_cpp.llama_sampler_sample(chain, ctx, index)), args.calls
    )
    fast_token, fast_us = per_call(lambda: fast.sample(ctx, -1), args.calls)
    print(f"model: {path.name}, {n_vocab} tokens; {args.calls} calls each")
    print(f"llama_sampler_sample (logit bias + greedy chain): {chain_us:7.1f} us CPU per token")
    print(f"SamplerChain plain greedy (GreedyArgmax):          {fast_us:7.1f} us CPU per token")
    print(f"same token: {chain_token == fast_token} ({chain_token})")
    fast.close()
    llama_cpp.llama_sampler_free(chain)
    llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(model)


if __name__ == "__main__":
    main()
