"""What Hearth's flash attention "auto" means, shared by the engine and the fit estimate.

llama.cpp's own "auto" turns flash attention on wherever the device supports it, the CPU
included. On the CPU that is a poor trade: on the 2-core dev machine with the 250M bench
model, at 2,000 tokens of context each decoded token took 57-66 ms with it and 22 ms
without, a 17-token follow-up 0.69-0.79 s against 0.10-0.11 s; at short context the two
were even, and only a 2,000-token prefill was faster with it (6.0-7.3 s vs 8.0-8.3 s).
Its advantage on the CPU is memory: without it the attention scores of a micro-batch
are materialized (n_kv x n_ubatch x n_head floats). So for CPU-only loads "auto" means
off while that buffer stays small, and llama.cpp decides everywhere else.
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
