"""What Hearth's flash attention "auto" means, shared by the engine and the fit estimate.

llama.cpp's own "auto" turns flash attention on wherever the device supports it, the CPU
included. For CPU-only loads Hearth's "auto" means off while the attention-score buffer
that then needs stays small, and llama.cpp decides everywhere else. Two reasons:

- **The same reply, however its prompt got into the cache.** llama.cpp's CPU kernel
  takes two paths: prompts of many tokens per sequence go through a tiled path that
  sums in float32, a decode step or a short batch through one that sums V in float16.
  So a token's attention differs with the batch it was computed in, and a greedy reply
  could change with it: a follow-up restored from the prefix cache against the same
  prompt prefilled cold, drafted tokens verified in a batch against plain decoding
  (the synthetic draft pair of tests/integration/test_speculative.py differs with it
  on, and is equal with it off). Hearth's prefix cache, prompt cache and speculative
  decoding promise the reply of a cold, plain run.
- **Speed depends on the CPU.** On session 1's Xeon, with the 250M bench model, at
  2,000 tokens of context each decoded token took 57-66 ms with it and 22 ms without;
  on session 9's EPYC it is faster at every context (1.07x at 4 streams of short
  prompts, 1.4-1.6x at 2,000-3,800 tokens on Gemma 3 270M; ``bench/flash_attention.py``
  measures a machine). "On" stays one setting away.

Its advantage on the CPU is also memory: without it the attention scores of a
micro-batch are materialized (n_kv x n_ubatch x n_head floats), so past
``MAX_CPU_SCORE_BYTES`` "auto" leaves it to llama.cpp.
"""
from __future__ import annotations

# The non-flash attention-score buffer "auto" accepts on the CPU: 8,192 tokens of
# context with 32 heads and 512-token micro-batches.
MAX_CPU_SCORE_BYTES = 512 * 1024 * 1024

# V caches llama.cpp can use without flash attention (quantized V requires it).
_PLAIN_V_CACHES = frozenset({"f32", "f16", "bf16"})


def score_buffer_bytes(n_kv: int, n_ubatch: int, n_head: int) -> int:
    """The f32 attention scores of one micro-batch when flash attention is off."""
    return n_kv * n_ubatch * n_head * 4


def auto_turns_flash_attention_off(
    *,
    gpu_offload: bool,
    cache_type_v: str,
    n_ctx: int,
    n_slots: int,
    kv_unified: bool,
    n_batch: int,
    n_ubatch: int,
    n_head: int,
) -> bool:
    """True where Hearth's "auto" disables flash attention instead of asking llama.cpp.

    Takes the load's own knobs (``n_ctx`` per slot), so the engine and the fit estimate
    derive the attention span and micro-batch the same way."""
    if gpu_offload or cache_type_v.lower() not in _PLAIN_V_CACHES:
        return False
    n_kv = n_ctx * (n_slots if kv_unified else 1)
    return score_buffer_bytes(n_kv, min(n_ubatch, n_batch), n_head) <= MAX_CPU_SCORE_BYTES
