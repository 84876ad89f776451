"""Forward passes until prompts prefilled together have their first logits.

    .venv/bin/python bench/prefill_passes.py [--model M.gguf] [--prompts 8] [--rounds 2]

With one KV stream per slot, llama.cpp runs a batch in passes that hold the same number
of tokens of each sequence (``split_equal``). This fills batches with Hearth's
``BatchBuilder`` for N new prompts of unequal length (44-47 tokens on Gemma 3), queued
at once in adjacent slots, and decodes until every prompt has its first logits, the
way the scheduler steps (a slot whose prompt ended decodes one token a step). It does
so twice per round on the same prompts: with prompt chunks of equal size (Hearth's
``equal_share``) and with the ragged chunks of before (each slot took what the budget
left). Passes are counted with llama.cpp's eval callback (one call per graph node,
divided by the calls of a one-token pass), so the count does not depend on how busy
the machine is; wall times are printed too.
"""

from __future__ import annotations

import argparse
import secrets
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import llama_cpp

from engine import prompt_text
from hearth.core.sampling import SamplingParams
from hearth.engine import batch as batch_module
from hearth.engine.batch import BatchBuilder
from hearth.engine.slots import Job, Slot
from real_model import ensure_real_model

_QUIET = llama_cpp.llama_log_callback(lambda _level, _text, _data: None)
N_SLOTS, N_BATCH, N_UBATCH = 8, 2048, 512
Share = Callable[[Sequence[int], int], int]


def ragged_share(remaining: Sequence[int], budget: int) -> int:
    """Before: no cap per slot; the first prefilling slots took what the budget allowed."""
    return budget if remaining and budget > 0 else 0


class Counter:
    def __init__(self) -> None:
        self.asks = 0
        self.callback = llama_cpp.ggml_backend_sched_eval_callback(self._ask)

    def _ask(self, _tensor: object, ask: bool, _user: object) -> bool:
        self.asks += int(ask)
        return False  # observe nothing: the graph runs whole


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", type=Path)
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    llama_cpp.llama_log_set(_QUIET, None)
    llama_cpp.llama_backend_init()
    path = args.model or ensure_real_model()
    model = llama_cpp.llama_model_load_from_file(
        str(path).encode(), llama_cpp.llama_model_default_params()
    )
    vocab = llama_cpp.llama_model_get_vocab(model)
    counter = Counter()
    params = llama_cpp.llama_context_default_params()
    params.n_ctx, params.n_seq_max = 2048 * N_SLOTS, N_SLOTS
    params.n_batch, params.n_ubatch = N_BATCH, N_UBATCH
    params.n_threads = params.n_threads_batch = 2
    params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
    params.cb_eval = counter.callback
    ctx = llama_cpp.llama_init_from_model(model, params)
    memory = llama_cpp.llama_get_memory(ctx)
    builder = BatchBuilder(N_BATCH)

    def tokenize(text: str) -> list[int]:
        data = text.encode()
        out = (llama_cpp.llama_token * 512)()
        return list(out[: llama_cpp.llama_tokenize(vocab, data, len(data), out, 512, True, False)])

    def slots_for(prompts: list[list[int]]) -> list[Slot]:
        slots = [Slot(seq_id=i) for i in range(N_SLOTS)]
        for slot, tokens in zip(slots, prompts, strict=False):
            slot.job = Job(tokens=tokens, params=SamplingParams(), sink=lambda _e: None)
            slot.n_prompt = len(tokens)
        return slots

    counter.asks = 0  # calibration: the asks of one pass
    builder.fill(slots_for([[2]]), {}, N_BATCH)
    if llama_cpp.llama_decode(ctx, builder.batch) != 0:
        raise RuntimeError("decode failed")
    per_pass = counter.asks
    llama_cpp.llama_memory_clear(memory, True)

    def run(name: str, share: Share, prompts: list[list[int]]) -> None:
        batch_module.equal_share = share  # what fill() calls for the chunk size
        slots = slots_for(prompts)
        firsts: list[tuple[float, float]] = []  # (passes, seconds) at each first logits
        counter.asks, started, calls = 0, time.perf_counter(), 0
        while len(firsts) < len(prompts):
            decoding = sum(s.pending_token is not None for s in slots)
            step = builder.fill(slots, {}, N_UBATCH - decoding if decoding else N_BATCH)
            if llama_cpp.llama_decode(ctx, builder.batch) != 0:
                raise RuntimeError("decode failed")
            calls += 1
            for slot, piece in step.chunks:
                slot.cached.extend(piece)
                slot.pending_token = None
            for slot, _, _ in step.outputs:
                if slot.n_generated == 0:
                    firsts.append((counter.asks / per_pass, time.perf_counter() - started))
                slot.n_generated += 1
                slot.pending_token = 100  # any token: only the shape of the steps matters
        llama_cpp.llama_memory_clear(memory, True)
        at = [f"{p:.0f}" for p, _ in sorted(firsts)]
        p50 = sorted(s for _, s in firsts)[len(firsts) // 2]
        print(f"  {name:<6} {calls} decodes; passes at each first token: {' '.join(at)}; "
              f"p50 wall {p50 * 1000:.0f} ms")  # fmt: skip

    equal = batch_module.equal_share
    for round_no in range(args.rounds):
        tag = secrets.token_hex(3)
        prompts = [
            tokenize(prompt_text(f"{tag}-{i}", 30 + i * 5 % 3, i)) for i in range(args.prompts)
        ]
        print(f"round {round_no + 1}: prompt lengths {[len(t) for t in prompts]}")
        run("equal", equal, prompts)
        run("ragged", ragged_share, prompts)
    batch_module.equal_share = equal
    builder.free()
    llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(model)


if __name__ == "__main__":
    main()
