"""A synthetic llama GGUF with the shape of a 250M-parameter model, for benchmarks.

The weights are seeded random numbers: the model talks nonsense, but it costs llama.cpp
exactly what a real model of this shape costs. The vocabulary is a byte-fallback
SentencePiece one padded with ordinary pieces to 32,000 tokens, so the embedding and
output matrices have the real size and English text tokenizes at a realistic rate.

Output rows of every non-normal token (control and byte tokens) are zero, so greedy
decoding only ever emits printable pieces and each token streams as one text chunk.
"""

from __future__ import annotations

import ctypes
import itertools
import string
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np

CACHE_DIR = Path.home() / ".cache" / "hearth-bench"
MODEL_VERSION = 1  # bump when anything below changes the file

UNK_ID, BOS_ID, EOS_ID = 0, 1, 2
BYTE_BASE_ID = 3
IM_START_ID, IM_END_ID = 259, 260
FIRST_NORMAL_ID = 261

CHATML_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

_TEXT = (
    "the of and to in is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there been one all we their has would when "
    "if will more no out so said what up its about into than them can only other new "
    "some could time these two may then do first any my now such like our over man me "
    "even most made after also did many before must through back years where much your "
    "way well down should because each just those people how too little state good very "
    "make world still own see men work long get here between both life being under never "
    "day same another know while last might us great old year off come since against go "
    "came right used take three model token request server stream prompt cache slot "
    "batch decode engine client benchmark hearth llama"
)
_WORDS = _TEXT.split()


@dataclass(frozen=True)
class ModelShape:
    n_vocab: int = 32000
    n_embd: int = 1024
    n_ff: int = 2816
    n_layer: int = 16
    n_head: int = 16
    n_head_kv: int = 4
    context_length: int = 4096

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head


@dataclass(frozen=True)
class Vocab:
    tokens: list[str]
    scores: list[float]
    types: list[int]


def _normal_pieces() -> Iterator[str]:
    """Pieces in preference order; every piece's prefixes come before it (SPM merges)."""
    lower, upper = string.ascii_lowercase, string.ascii_uppercase
    yield "\u2581"
    yield from lower + upper + string.digits + string.punctuation
    for word in _WORDS:
        piece = "\u2581" + word
        for end in range(2, len(piece) + 1):
            yield piece[:end]
        for end in range(2, len(word) + 1):
            yield word[:end]
    for a in lower + upper:
        yield "\u2581" + a
    for a, b in itertools.product(lower, repeat=2):
        yield a + b
        yield "\u2581" + a + b
    for a, b in itertools.product(upper, lower):
        yield "\u2581" + a + b
    for a, b, c in itertools.product(lower, repeat=3):
        yield a + b + c
        yield "\u2581" + a + b + c


def build_vocab(n_vocab: int) -> Vocab:
    tt = gguf.TokenType
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256))]
    tokens += ["<|im_start|>", "<|im_end|>"]
    types = [tt.UNKNOWN, tt.CONTROL, tt.CONTROL, *([tt.BYTE] * 256), tt.CONTROL, tt.CONTROL]
    assert len(tokens) == FIRST_NORMAL_ID
    seen = set(tokens)
    for piece in _normal_pieces():
        if len(tokens) == n_vocab:
            break
        if piece not in seen:
            seen.add(piece)
            tokens.append(piece)
            types.append(tt.NORMAL)
    if len(tokens) < n_vocab:
        raise ValueError(f"cannot build {n_vocab} distinct pieces")
    scores = [0.0] * FIRST_NORMAL_ID + [-float(i) for i in range(n_vocab - FIRST_NORMAL_ID)]
    return Vocab(tokens, scores, [int(t) for t in types])


def _tensor_shapes(shape: ModelShape) -> dict[str, tuple[int, ...]]:
    t = gguf.MODEL_TENSOR

    def name(kind: gguf.MODEL_TENSOR, bid: int = 0) -> str:
        return gguf.TENSOR_NAMES[kind].format(bid=bid) + ".weight"

    d, ff, kv = shape.n_embd, shape.n_ff, shape.n_head_kv * shape.head_dim
    shapes: dict[str, tuple[int, ...]] = {
        name(t.TOKEN_EMBD): (shape.n_vocab, d),
        name(t.OUTPUT_NORM): (d,),
        name(t.OUTPUT): (shape.n_vocab, d),
    }
    layer = {
        t.ATTN_NORM: (d,),
        t.ATTN_Q: (d, d),
        t.ATTN_K: (kv, d),
        t.ATTN_V: (kv, d),
        t.ATTN_OUT: (d, d),
        t.FFN_NORM: (d,),
        t.FFN_GATE: (ff, d),
        t.FFN_UP: (ff, d),
        t.FFN_DOWN: (d, ff),
    }
    for bid in range(shape.n_layer):
        for kind, dims in layer.items():
            shapes[name(kind, bid)] = dims
    return shapes


def _write_metadata(w: gguf.GGUFWriter, shape: ModelShape, vocab: Vocab) -> None:
    w.add_type(gguf.GGUFType.MODEL)
    w.add_name("Hearth Bench 250M")
    w.add_file_type(int(gguf.LlamaFileType.MOSTLY_F16))
    w.add_vocab_size(shape.n_vocab)
    w.add_context_length(shape.context_length)
    w.add_embedding_length(shape.n_embd)
    w.add_feed_forward_length(shape.n_ff)
    w.add_block_count(shape.n_layer)
    w.add_head_count(shape.n_head)
    w.add_head_count_kv(shape.n_head_kv)
    w.add_rope_dimension_count(shape.head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(vocab.tokens)
    w.add_token_scores(vocab.scores)
    w.add_token_types(vocab.types)
    w.add_bos_token_id(BOS_ID)
    w.add_eos_token_id(EOS_ID)
    w.add_unk_token_id(UNK_ID)
    w.add_eot_token_id(IM_END_ID)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_chat_template(CHATML_TEMPLATE)


def write_f16(path: Path, shape: ModelShape, *, seed: int = 0) -> Path:
    """Write the unquantized model (about 0.5 GB for the default shape)."""
    vocab = build_vocab(shape.n_vocab)
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(path, gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.LLAMA])
    _write_metadata(w, shape, vocab)
    quiet = np.array(vocab.types) != int(gguf.TokenType.NORMAL)
    output_name = gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.OUTPUT] + ".weight"
    for name, dims in _tensor_shapes(shape).items():
        if len(dims) == 1:
            w.add_tensor(name, np.ones(dims, dtype=np.float32))
            continue
        data = rng.standard_normal(dims, dtype=np.float32) * 0.05
        if name == output_name:
            data[quiet] = 0.0
        w.add_tensor(name, data.astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def quantize_q4_k_m(src: Path, dst: Path, *, nthread: int = 0) -> Path:
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M
    params.nthread = nthread
    rc = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(params))
    if rc != 0:
        raise RuntimeError(f"llama_model_quantize({src} -> {dst}) returned {rc}")
    return dst


def ensure_bench_model(cache_dir: Path = CACHE_DIR, shape: ModelShape | None = None) -> Path:
    """The cached Q4_K_M bench model, synthesized on first use (about a minute)."""
    shape = shape or ModelShape()
    cache_dir.mkdir(parents=True, exist_ok=True)
    dst = cache_dir / f"hearth-bench-250m-v{MODEL_VERSION}-Q4_K_M.gguf"
    if dst.exists():
        return dst
    f16 = cache_dir / f"hearth-bench-250m-v{MODEL_VERSION}-F16.gguf.tmp"
    partial = dst.with_suffix(".gguf.partial")
    try:
        write_f16(f16, shape)
        quantize_q4_k_m(f16, partial)
        partial.replace(dst)
    finally:
        f16.unlink(missing_ok=True)
        partial.unlink(missing_ok=True)
    return dst
