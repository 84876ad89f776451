"""Flash attention on the CPU: decode and prefill with it and without, in one process.

    .venv/bin/python bench/flash_attention.py [--model PATH] [--streams 1 4] \
        [--contexts 64 512 2048 3800] [--threads 2]

Whether llama.cpp's flash-attention kernel beats the plain one on a CPU depends on the
CPU: on session 1's Xeon it was 2.6-3x slower at 2,000 tokens of context, on session 9's
EPYC it is faster at every context (docs/benchmarks.md, "Flash attention on the CPU").
Hearth's "auto" keeps it off on the CPU for another reason too, the same greedy reply
whichever batch computed a prompt (app/hearth/core/attention.py); this tells what
``--flash-attn on`` would buy on a machine.

For each context length and stream count, one context per setting (the engine's shape:
a KV stream per slot, full-size sliding-window caches, the given micro-batch), every
stream prefilled to that length, then ``--steps`` decode steps of one token per stream.
Prints ms per decode step, tok/s, the prefill time, and the ratio on / off. The model
defaults to Gemma 3 270M where the bench or the tests fetched it.
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import time
from pathlib import Path

import llama_cpp

from real_model import local_real_model

_MODES = {
    "off": llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED,
    "on": llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED,
}
Row = tuple[int, int, int, bool]  # token, position, sequence, wants logits


class Bench:
    """One loaded model; ``run`` makes a context per setting and times it."""

    def __init__(self, path: Path, threads: int) -> None:
        llama_cpp.llama_backend_init()
        llama_cpp.llama_log_set(_quiet, ctypes.c_void_p(0))
        self.model = llama_cpp.llama_model_load_from_file(
            str(path).encode(), llama_cpp.llama_model_default_params()
        )
        if not self.model:
            raise SystemExit(f"llama.cpp could not load {path}")
        vocab = llama_cpp.llama_model_get_vocab(self.model)
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(vocab))
        self.threads = threads

    def context(self, streams: int, n_ctx: int, mode: str) -> llama_cpp.llama_context_p:
        params = llama_cpp.llama_context_default_params()
        params.n_seq_max = streams
        params.n_ctx = n_ctx * streams
        params.n_batch, params.n_ubatch = 2048, 512
        params.n_threads = params.n_threads_batch = self.threads
        params.kv_unified, params.swa_full, params.no_perf = False, True, True
        params.flash_attn_type = _MODES[mode]
        return llama_cpp.llama_init_from_model(self.model, params)

    def decode(self, ctx: llama_cpp.llama_context_p, rows: list[Row]) -> None:
        """Decode ``rows`` as one batch."""
        batch = llama_cpp.llama_batch_init(len(rows), 0, 1)
        try:
            for i, (token, pos, seq, logits) in enumerate(rows):
                batch.token[i], batch.pos[i], batch.logits[i] = token % self.n_vocab, pos, logits
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = seq
            batch.n_tokens = len(rows)
            if llama_cpp.llama_decode(ctx, batch) != 0:
                raise SystemExit("llama_decode failed")
        finally:
            llama_cpp.llama_batch_free(batch)

    def run(self, streams: int, length: int, mode: str, steps: int) -> tuple[float, float]:
        """(seconds per decode step at ``length`` tokens of context, prefill seconds)."""
        ctx = self.context(streams, max(length + steps + 16, 256), mode)
        try:
            started = time.perf_counter()
            for seq in range(streams):
                for at in range(0, length, 512):
                    n = min(512, length - at)
                    self.decode(ctx, [(1000 + 7 * (at + j) + seq, at + j, seq, j == n - 1)
                                      for j in range(n)])  # fmt: skip
            prefill = time.perf_counter() - started
            self.decode(ctx, [(500 + s, length, s, True) for s in range(streams)])  # warm-up
            started = time.perf_counter()
            for step in range(steps):
                self.decode(ctx, [(600 + step + s, length + 1 + step, s, True)
                                  for s in range(streams)])  # fmt: skip
            return (time.perf_counter() - started) / steps, prefill
        finally:
            llama_cpp.llama_free(ctx)


@llama_cpp.llama_log_callback
def _quiet(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
    del level, text, user_data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--contexts", type=int, nargs="+", default=[64, 512, 2048, 3800])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=24)
    args = parser.parse_args()
    model = args.model or local_real_model()
    if model is None:
        raise SystemExit("no Gemma 3 270M on disk: run bench/real_model.py, or pass --model")
    bench = Bench(model, args.threads)
    print(f"{model.name}, {args.threads} threads; ms per decode step (tok/s), prefill s")
    for streams in args.streams:
        for length in args.contexts:
            got = {mode: bench.run(streams, length, mode, args.steps) for mode in _MODES}
            cells = [
                f"{mode} {1000 * step:6.1f} ms ({streams / step:6.1f} tok/s), "
                f"prefill {prefill:6.2f} s"
                for mode, (step, prefill) in got.items()
            ]
            ratio = got["off"][0] / got["on"][0]
            print(f"{streams} stream(s), {length:5d} tokens: {'; '.join(cells)}; "
                  f"decode on / off {ratio:.2f}x", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
