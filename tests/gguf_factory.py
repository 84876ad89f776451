"""Tiny, reproducible GGUF models for tests.

Tests need real files that real llama.cpp loads, tokenizes and samples from, but they
must run offline and in seconds. So we synthesize a small llama-architecture model with
random weights, a byte-fallback SentencePiece vocabulary (any UTF-8 text round-trips),
a ChatML template and FIM tokens, and quantize it with llama.cpp itself.

The writer underneath (vocabulary assembly, llama metadata, seeded tensors) is
parametric, because bench/gguf_synth.py builds its 250M-shape model with it too: one
writer means the bench model and the test model cannot drift apart in how they are laid
out, only in their shape and vocabulary.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import gguf
import numpy as np

# --------------------------------------------------------------------------- vocabulary

UNK_ID = 0
BOS_ID = 1
EOS_ID = 2
BYTE_BASE_ID = 3  # <0x00> .. <0xFF> occupy ids 3..258
IM_START_ID = 259
IM_END_ID = 260
FIM_PRE_ID = 261
FIM_SUF_ID = 262
FIM_MID_ID = 263
FIRST_NORMAL_ID = 264

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
FIM_PRE = "<|fim_prefix|>"
FIM_SUF = "<|fim_suffix|>"
FIM_MID = "<|fim_middle|>"
FIM_REP = "<|repo_name|>"  # repository-level FIM tokens, as Qwen2.5-Coder has them
FIM_SEP = "<|file_sep|>"

# ChatML, as Qwen-style models ship it; bos_token first so llama.cpp's add_bos and the
# template agree on exactly one BOS.
CHATML_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

_WORDS = [
    "the", "a", "an", "to", "and", "of", "is", "in", "it", "you", "that", "this", "for",
    "on", "with", "as", "are", "be", "was", "not", "hello", "world", "Hello", "World",
    "def", "return", "print", "import", "class", "if", "else", "while", "user",
    "assistant", "system", "model", "test", "chat", "token", "code", "text", "yes", "no",
]  # fmt: skip
_SUBWORDS = [
    "th", "he", "in", "er", "an", "re", "on", "at", "en", "nd", "es", "ed", "ing", "ll",
    "lo", "or", "ou", "it", "is", "st",
]  # fmt: skip
_PUNCT = list(".,!?'\"-:;()[]{}<>/=+*_#@%&|~`$^\\")


@dataclass(frozen=True)
class Vocab:
    """A SentencePiece-style vocabulary: parallel lists of pieces, scores and types."""

    tokens: list[str]
    scores: list[float]
    types: list[int]


def prefixes(piece: str) -> list[str]:
    """``piece``'s prefixes of two or more characters, shortest first, ``piece`` last.

    SPM merges two adjacent pieces only if their concatenation is in the vocab, so a
    word is reachable only if all of its prefixes are pieces too.
    """
    return [piece[:i] for i in range(2, len(piece) + 1)]


def make_vocab(controls: Sequence[str], pieces: Iterable[str], size: int | None = None) -> Vocab:
    """<unk>, <s>, </s>, the 256 byte tokens, ``controls``, then distinct ``pieces``.

    The fixed head keeps UNK/BOS/EOS and the byte tokens at the same ids in every model
    this module writes. Normal pieces score by their order (first is best); with
    ``size`` the vocabulary stops there and must reach it.
    """
    tt = gguf.TokenType
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256)), *controls]
    types = [tt.UNKNOWN, tt.CONTROL, tt.CONTROL] + [tt.BYTE] * 256 + [tt.CONTROL] * len(controls)
    n_special = len(tokens)
    seen = set(tokens)
    for piece in pieces:
        if len(tokens) == size:
            break
        if piece not in seen:
            seen.add(piece)
            tokens.append(piece)
            types.append(tt.NORMAL)
    if size is not None and len(tokens) < size:
        raise ValueError(f"cannot build {size} distinct pieces")
    scores = [0.0] * n_special + [-float(i) for i in range(len(tokens) - n_special)]
    return Vocab(tokens=tokens, scores=scores, types=[int(t) for t in types])


def non_normal_rows(vocab: Vocab, keep: Iterable[int] = ()) -> np.ndarray:
    """Mask of control and byte tokens, less the ids in ``keep``: the output rows to zero
    so that greedy decoding emits only normal pieces (see write_tiny_llama)."""
    quiet = np.array(vocab.types) != int(gguf.TokenType.NORMAL)
    quiet[list(keep)] = False
    return quiet


def build_vocab(repo_fim: bool = False) -> Vocab:
    """Build the fixed test vocabulary; special ids are constants above, never shifted.

    With ``repo_fim`` the repository-level FIM tokens follow <|fim_middle|> (at
    FIRST_NORMAL_ID and the next id), so normal pieces start two ids later.
    """
    normal: list[str] = ["\u2581"]
    normal += [chr(c) for c in range(ord("a"), ord("z") + 1)]
    normal += [chr(c) for c in range(ord("A"), ord("Z") + 1)]
    normal += [str(d) for d in range(10)] + _PUNCT
    for word in _WORDS:
        normal += prefixes("\u2581" + word)
    for sub in _SUBWORDS:
        normal += prefixes(sub)
    repo = [FIM_REP, FIM_SEP] if repo_fim else []
    vocab = make_vocab([IM_START, IM_END, FIM_PRE, FIM_SUF, FIM_MID, *repo], normal)
    assert vocab.tokens[FIRST_NORMAL_ID - 1] == FIM_MID
    return vocab


VOCAB = build_vocab()
REPO_FIM_VOCAB = build_vocab(repo_fim=True)
N_VOCAB = len(VOCAB.tokens)

# --------------------------------------------------------------------------- model

FILE_TYPES: dict[str, int] = {
    "F32": int(gguf.LlamaFileType.ALL_F32),
    "F16": int(gguf.LlamaFileType.MOSTLY_F16),
    "Q8_0": int(gguf.LlamaFileType.MOSTLY_Q8_0),
    "Q4_K_M": int(gguf.LlamaFileType.MOSTLY_Q4_K_M),
}


@dataclass(frozen=True)
class LlamaSpec:
    """Model shape, the tiny test model's by default; the vocabulary sets n_vocab.

    Row lengths (n_embd, n_ff) are multiples of 256 so k-quants apply.
    """

    n_embd: int = 256
    n_ff: int = 512
    n_layer: int = 2
    n_head: int = 4
    n_head_kv: int = 2
    context_length: int = 2048
    rope_freq_base: float = 10000.0
    rms_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head


TinyLlamaSpec = LlamaSpec  # the name tests know it by


def tensor_shapes(spec: LlamaSpec, n_vocab: int) -> dict[str, tuple[int, ...]]:
    """numpy shapes (row-major, i.e. ggml ne reversed) for the llama tensor names."""
    t = gguf.MODEL_TENSOR

    def name(kind: gguf.MODEL_TENSOR, bid: int = 0) -> str:
        return gguf.TENSOR_NAMES[kind].format(bid=bid) + ".weight"

    d, ff, kv = spec.n_embd, spec.n_ff, spec.n_head_kv * spec.head_dim
    shapes: dict[str, tuple[int, ...]] = {
        name(t.TOKEN_EMBD): (n_vocab, d),
        name(t.OUTPUT_NORM): (d,),
        name(t.OUTPUT): (n_vocab, d),
    }
    per_layer: dict[gguf.MODEL_TENSOR, tuple[int, ...]] = {
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
    for bid in range(spec.n_layer):
        for kind, shape in per_layer.items():
            shapes[name(kind, bid)] = shape
    return shapes


def write_llama(
    path: Path,
    spec: LlamaSpec,
    vocab: Vocab,
    *,
    name: str,
    seed: int = 0,
    dtype: Literal["F32", "F16"] = "F16",
    chat_template: str | None = CHATML_TEMPLATE,
    fim: bool = False,
    repo_fim: bool = False,
    quiet_rows: np.ndarray | None = None,
    weights: Mapping[str, np.ndarray] | None = None,
    pooling: gguf.PoolingType | None = None,
) -> Path:
    """Write a llama GGUF with seeded random weights; same arguments, same bytes.

    ``vocab`` must come from make_vocab (UNK/BOS/EOS at their constant ids) with
    <|im_start|>, <|im_end|> as its first controls, and with ``fim`` the three FIM
    tokens next, and with ``repo_fim`` <|repo_name|> and <|file_sep|> after them.
    Output rows in ``quiet_rows`` are zero. Tensors named in ``weights``
    are written as given (numpy shapes as tensor_shapes lists them), not drawn. A
    ``pooling`` type (and no chat template) makes an embedding model.
    """
    path = Path(path)
    rng = np.random.default_rng(seed)
    wtype = np.float16 if dtype == "F16" else np.float32

    w = start_model(
        path, gguf.MODEL_ARCH.LLAMA, name=name, file_type=FILE_TYPES[dtype],
        n_vocab=len(vocab.tokens), context_length=spec.context_length, n_embd=spec.n_embd,
        n_ff=spec.n_ff, n_layer=spec.n_layer, n_head=spec.n_head, n_head_kv=spec.n_head_kv,
    )  # fmt: skip
    w.add_rope_dimension_count(spec.head_dim)
    w.add_rope_freq_base(spec.rope_freq_base)
    w.add_layer_norm_rms_eps(spec.rms_eps)

    add_tokenizer(w, vocab)
    if fim:
        w.add_uint32(gguf.Keys.Tokenizer.FIM_PRE_ID, FIM_PRE_ID)
        w.add_uint32(gguf.Keys.Tokenizer.FIM_SUF_ID, FIM_SUF_ID)
        w.add_uint32(gguf.Keys.Tokenizer.FIM_MID_ID, FIM_MID_ID)
    if repo_fim:
        w.add_uint32(gguf.Keys.Tokenizer.FIM_REP_ID, FIRST_NORMAL_ID)
        w.add_uint32(gguf.Keys.Tokenizer.FIM_SEP_ID, FIRST_NORMAL_ID + 1)
    if chat_template is not None:
        w.add_chat_template(chat_template)
    if pooling is not None:
        w.add_pooling_type(pooling)

    output_name = gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.OUTPUT] + ".weight"
    for tname, shape in tensor_shapes(spec, len(vocab.tokens)).items():
        if weights is not None and tname in weights:
            w.add_tensor(tname, weights[tname].astype(np.float32 if len(shape) == 1 else wtype))
            continue
        if len(shape) == 1:  # norms stay F32 in every llama.cpp file type
            w.add_tensor(tname, np.ones(shape, dtype=np.float32))
            continue
        data = rng.standard_normal(shape, dtype=np.float32) * 0.05
        if tname == output_name and quiet_rows is not None:
            data[quiet_rows] = 0.0
        w.add_tensor(tname, data.astype(wtype))
    write_file(w)
    return path


def start_model(
    path: Path,
    arch: gguf.MODEL_ARCH,
    *,
    name: str,
    file_type: int,
    n_vocab: int,
    context_length: int,
    n_embd: int,
    n_ff: int,
    n_layer: int,
    n_head: int,
    n_head_kv: int,
) -> gguf.GGUFWriter:
    """A writer for a decoder GGUF of ``arch`` holding the keys every such file starts
    with, in this order (the test files' bytes depend on it); the caller adds the
    arch's own keys, the tokenizer and the tensors, then calls :func:`write_file`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(path, gguf.MODEL_ARCH_NAMES[arch])
    w.add_type(gguf.GGUFType.MODEL)
    w.add_name(name)
    w.add_file_type(file_type)
    w.add_vocab_size(n_vocab)
    w.add_context_length(context_length)
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(n_ff)
    w.add_block_count(n_layer)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    return w


def write_file(w: gguf.GGUFWriter) -> None:
    """Write the header, the keys and the tensors added to ``w``, and close the file."""
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_tiny_llama(
    path: Path,
    *,
    seed: int = 0,
    dtype: Literal["F32", "F16"] = "F16",
    spec: LlamaSpec | None = None,
    name: str = "Hearth Tiny Test",
    chat_template: str | None = CHATML_TEMPLATE,
    plain_output: bool = True,
    repo_fim: bool = False,
    pooling: gguf.PoolingType | None = None,
) -> Path:
    """Write the tiny test llama (VOCAB, FIM tokens); same arguments, same bytes.

    With ``repo_fim`` it also has Qwen2.5-Coder's repository-level FIM tokens
    (REPO_FIM_VOCAB): a different vocabulary, so different weights and outputs.

    With ``plain_output`` the output rows of control tokens (</s>, <|im_end|>, ...) and
    byte tokens (but newline) are zero, so their logits are 0 while the best of the ~240
    normal pieces is positive: greedy decoding never stops early and emits only printable
    ASCII and newlines, so tests of streaming and max_tokens get exact lengths. Use
    logit_bias to force an end or a byte token where a test needs one.
    """
    vocab = REPO_FIM_VOCAB if repo_fim else VOCAB
    quiet = non_normal_rows(vocab, keep=[BYTE_BASE_ID + ord("\n")]) if plain_output else None
    return write_llama(
        path,
        spec or LlamaSpec(),
        vocab,
        name=name,
        seed=seed,
        dtype=dtype,
        chat_template=chat_template,
        fim=True,
        repo_fim=repo_fim,
        quiet_rows=quiet,
        pooling=pooling,
    )


def write_scripted_llama(
    path: Path, reply: Sequence[str] = ("\u2581Hello", "!"), *, context_length: int = 65536
) -> Path:
    """A model that answers every prompt with the pieces of ``reply``, then ends its turn.

    Its layers write nothing into the residual stream (attention output and FFN down
    are zero), so the logits depend on the last token alone: the embedding of any token
    but the reply's own says "begin the reply", each reply piece's says "next piece",
    the last one's "end of text". Deterministic at any temperature, and one thin layer,
    so that agents whose prompts run to tens of thousands of tokens finish a turn fast.
    """
    spec = LlamaSpec(n_embd=32, n_ff=32, n_layer=1, n_head=1, n_head_kv=1,
                     context_length=context_length)  # fmt: skip
    pieces = [VOCAB.tokens.index(piece) for piece in reply]
    chain = [*pieces, EOS_ID]
    shapes = tensor_shapes(spec, N_VOCAB)
    names = gguf.TENSOR_NAMES
    embd, output = (names[kind] + ".weight" for kind in (gguf.MODEL_TENSOR.TOKEN_EMBD,
                                                           gguf.MODEL_TENSOR.OUTPUT))  # fmt: skip
    weights = {name: np.zeros(shape, dtype=np.float32) for name, shape in shapes.items()
               if ".attn_output." in name or ".ffn_down." in name}  # fmt: skip
    weights[embd] = np.zeros(shapes[embd], dtype=np.float32)
    weights[embd][:, 0] = 1.0
    weights[output] = np.zeros(shapes[output], dtype=np.float32)
    weights[output][chain[0], 0] = 10.0
    for k, token in enumerate(pieces, start=1):
        weights[embd][token] = 0.0
        weights[embd][token, k] = 1.0
        weights[output][chain[k], k] = 10.0
    return write_llama(path, spec, VOCAB, name="Hearth Scripted Test", fim=True, weights=weights)


# --------------------------------------------------------------------------- quantize


class QuantizeError(RuntimeError):
    """llama_model_quantize returned a non-zero status."""


def quantize(src: Path, dst: Path, ftype: str, *, nthread: int = 0) -> Path:
    """Quantize ``src`` to ``dst`` with llama.cpp's own quantizer ("Q8_0", "Q4_K_M")."""
    import llama_cpp  # lazy: keeps this module importable where llama_cpp is not

    ftypes = {
        "Q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0,
        "Q4_K_M": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M,
    }
    if ftype not in ftypes:
        raise ValueError(f"unsupported ftype {ftype!r}; expected one of {sorted(ftypes)}")
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftypes[ftype]
    params.nthread = nthread
    rc = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(params))
    if rc != 0:
        raise QuantizeError(f"llama_model_quantize({src} -> {dst}, {ftype}) returned {rc}")
    return dst


# --------------------------------------------------------------------------- corrupt files

CorruptKind = Literal["truncated", "bad_magic", "header_only"]


def write_corrupt_gguf(path: Path, kind: CorruptKind = "truncated") -> Path:
    """Write a broken GGUF, the way interrupted downloads and wrong files look.

    truncated: a valid tiny model cut in the middle of its tensor data.
    bad_magic: not a GGUF at all.
    header_only: a GGUF header promising metadata and tensors, then end of file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "truncated":
        write_tiny_llama(path)
        size = path.stat().st_size
        with path.open("r+b") as f:
            f.truncate(size // 2)
    elif kind == "bad_magic":
        path.write_bytes(b"NOTGGUF!" + bytes(range(256)) * 16)
    elif kind == "header_only":
        path.write_bytes(struct.pack("<IIQQ", gguf.GGUF_MAGIC, gguf.GGUF_VERSION, 3, 5))
    else:
        raise ValueError(f"unknown corruption kind {kind!r}")
    return path


# --------------------------------------------------------------------------- speculative pair


def damp_blocks(path: Path, blocks: Iterable[int], scale: float) -> Path:
    """Scale what blocks write into the residual stream (``attn_output`` and
    ``ffn_down``) by ``scale``, in place: 0 makes them pass their input through."""
    reader = gguf.GGUFReader(path, "r+")
    names = {f"blk.{b}.{kind}.weight" for b in blocks for kind in ("attn_output", "ffn_down")}
    for tensor in reader.tensors:
        if tensor.name in names:
            tensor.data[...] = (tensor.data.astype(np.float32) * scale).astype(tensor.data.dtype)
    reader.data.flush()
    return path


def write_spec_pair(
    directory: Path,
    spec: LlamaSpec,
    vocab: Vocab,
    *,
    draft_layers: int = 2,
    noise: float = 0.0,
    seed: int = 0,
    quiet_rows: np.ndarray | None = None,
    name: str = "Hearth Spec",
) -> tuple[Path, Path]:
    """An F16 target/draft pair whose predictions agree by construction.

    The target's blocks from ``draft_layers`` on write ``noise`` times their random
    output (zero: nothing), so it computes what the draft computes, at
    ``spec.n_layer / draft_layers`` times its cost. The draft is the same seeded writer
    with fewer blocks: write_llama draws the embedding and output matrix before the
    blocks, so both share those and their first blocks. Some noise lowers acceptance.
    """
    target = write_llama(
        directory / f"{name.replace(' ', '-')}-target-F16.gguf", spec, vocab,
        name=f"{name} target", seed=seed, quiet_rows=quiet_rows,
    )  # fmt: skip
    damp_blocks(target, range(draft_layers, spec.n_layer), noise)
    small = LlamaSpec(**{**spec.__dict__, "n_layer": draft_layers})
    draft = write_llama(
        directory / f"{name.replace(' ', '-')}-draft-F16.gguf", small, vocab,
        name=f"{name} draft", seed=seed, quiet_rows=quiet_rows,
    )  # fmt: skip
    return target, draft


def add_tokenizer(w: gguf.GGUFWriter, vocab: Vocab) -> None:
    """The SentencePiece-style tokenizer every synthetic model here shares: ``vocab``
    with the test ids for BOS, EOS, UNK and end of turn."""
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
