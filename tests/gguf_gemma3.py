"""A tiny Gemma 3 GGUF with sliding-window attention, for tests of SWA models.

The llama architecture of tests/gguf_factory.py has no sliding window; Gemma 3 does:
five of every six layers attend only to the last ``sliding_window`` positions, and
llama.cpp keeps their KV cache apart (``llama_kv_cache_iswa``). A random-weight model
with a short window shows, in seconds, what a real Gemma does over thousands of tokens:
what the sequence-state API saves of those layers, and what a cut back to a prefix loses.

Same vocabulary as the tiny llama (byte fallback, ChatML markers), so tests feed it the
same token ids.
"""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

from gguf_factory import FILE_TYPES, VOCAB, add_tokenizer, non_normal_rows, start_model, write_file

N_LAYER = 6  # Gemma 3's pattern: layers 0-4 slide, layer 5 sees the whole context
N_EMBD = 256
N_FF = 512
N_HEAD = 4
N_HEAD_KV = 2
HEAD_DIM = 64


def _shapes(n_vocab: int) -> dict[str, tuple[int, ...]]:
    """numpy shapes (ggml's ne reversed) of every tensor llama.cpp's gemma3 loads."""
    t = gguf.MODEL_TENSOR

    def name(kind: gguf.MODEL_TENSOR, bid: int = 0) -> str:
        return gguf.TENSOR_NAMES[kind].format(bid=bid) + ".weight"

    q, kv = N_HEAD * HEAD_DIM, N_HEAD_KV * HEAD_DIM
    shapes: dict[str, tuple[int, ...]] = {
        name(t.TOKEN_EMBD): (n_vocab, N_EMBD),  # tied: the output reuses it
        name(t.OUTPUT_NORM): (N_EMBD,),
    }
    per_layer: dict[gguf.MODEL_TENSOR, tuple[int, ...]] = {
        t.ATTN_NORM: (N_EMBD,),
        t.ATTN_Q: (q, N_EMBD),
        t.ATTN_K: (kv, N_EMBD),
        t.ATTN_V: (kv, N_EMBD),
        t.ATTN_Q_NORM: (HEAD_DIM,),
        t.ATTN_K_NORM: (HEAD_DIM,),
        t.ATTN_OUT: (N_EMBD, q),
        t.ATTN_POST_NORM: (N_EMBD,),
        t.FFN_PRE_NORM: (N_EMBD,),
        t.FFN_GATE: (N_FF, N_EMBD),
        t.FFN_UP: (N_FF, N_EMBD),
        t.FFN_DOWN: (N_EMBD, N_FF),
        t.FFN_POST_NORM: (N_EMBD,),
    }
    for bid in range(N_LAYER):
        for kind, shape in per_layer.items():
            shapes[name(kind, bid)] = shape
    return shapes


# Gemma's way with a system message, on the tiny vocabulary's ChatML markers: no turn of
# its own, its text opens the first user turn. So the messages before the last one
# render to no prefix of the whole prompt (the last one holds the system text).
FOLDED_SYSTEM_TEMPLATE = (
    "{{ bos_token }}{% set ns = namespace(head='') %}"
    "{% for m in messages %}"
    "{% if m['role'] == 'system' %}{% set ns.head = m['content'] + '\n\n' %}"
    "{% else %}{{ '<|im_start|>' + m['role'] + '\n' + ns.head + m['content'] + '<|im_end|>\n' }}"
    "{% set ns.head = '' %}{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def write_tiny_gemma3(
    path: Path, *, sliding_window: int = 64, seed: int = 0, chat_template: str | None = None
) -> Path:
    """Write the tiny Gemma 3 (F16, seeded); same arguments, same bytes. Greedy decoding
    emits only normal pieces (control and byte rows of the tied embedding are zero) and
    never ends early, so replies have exact lengths. Without ``chat_template`` it has
    none (Hearth's fallback applies)."""
    path = Path(path)
    rng = np.random.default_rng(seed)
    w = start_model(
        path, gguf.MODEL_ARCH.GEMMA3, name="Hearth Tiny Gemma 3", file_type=FILE_TYPES["F16"],
        n_vocab=len(VOCAB.tokens), context_length=4096, n_embd=N_EMBD, n_ff=N_FF,
        n_layer=N_LAYER, n_head=N_HEAD, n_head_kv=N_HEAD_KV,
    )  # fmt: skip
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_sliding_window(sliding_window)

    add_tokenizer(w, VOCAB)
    if chat_template is not None:
        w.add_chat_template(chat_template)

    quiet = non_normal_rows(VOCAB)
    embd = gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.TOKEN_EMBD] + ".weight"
    for tname, shape in _shapes(len(VOCAB.tokens)).items():
        if len(shape) == 1:  # norms (GGUF holds Gemma's 1 + w already)
            w.add_tensor(tname, np.ones(shape, dtype=np.float32))
            continue
        data = rng.standard_normal(shape, dtype=np.float32) * 0.05
        if tname == embd:
            data[quiet] = 0.0
        w.add_tensor(tname, data.astype(np.float16))
    write_file(w)
    return path
