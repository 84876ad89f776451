"""What the synthetic vision GGUF writers share (gguf_projector, gguf_qwen2vl, gguf_qwen3vl).

Each of those writes one kind of projector or text model, but the parts common to all
of them (tensor names from the ``gguf`` tables, the projector header llama.cpp's clip
loader reads, a pre-norm ViT block's shapes, how norms, biases and matrices are filled,
the text model's ChatML vocabulary and quiet output rows) live here once (the
start and the end of any decoder file are gguf_factory's), so a fix to
one is a fix to all. Each writer keeps its own key and tensor order: the files must stay
byte for byte what the tests' greedy references were taken from.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

import gguf
import numpy as np

from gguf_factory import (
    CHATML_TEMPLATE,
    FILE_TYPES,
    VOCAB,
    add_tokenizer,
    non_normal_rows,
    start_model,
    write_file,
)

# a layer's (weight, bias) numpy shapes, by tensor kind
LayerShapes = dict[gguf.MODEL_TENSOR, tuple[tuple[int, ...], tuple[int, ...]]]


class VisionShape(Protocol):
    """The fields of a projector spec the shared header reads."""

    @property
    def text_n_embd(self) -> int: ...
    @property
    def n_embd(self) -> int: ...
    @property
    def n_ff(self) -> int: ...
    @property
    def n_layer(self) -> int: ...
    @property
    def n_head(self) -> int: ...
    @property
    def image_size(self) -> int: ...
    @property
    def patch_size(self) -> int: ...
    @property
    def eps(self) -> float: ...


class TextShape(Protocol):
    """The fields of a text model spec the shared header reads."""

    @property
    def text_n_embd(self) -> int: ...
    @property
    def text_n_ff(self) -> int: ...
    @property
    def text_n_layer(self) -> int: ...
    @property
    def text_n_head(self) -> int: ...
    @property
    def text_n_head_kv(self) -> int: ...


def tensor_name(kind: gguf.MODEL_TENSOR, suffix: str, bid: int = 0) -> str:
    """llama.cpp's name for block ``bid``'s tensor of ``kind`` (``suffix``: weight/bias)."""
    return gguf.TENSOR_NAMES[kind].format(bid=bid) + "." + suffix


def vit_block_shapes(d: int, ff: int) -> LayerShapes:
    """A pre-norm ViT block with separate q, k, v and output matrices, all biased."""
    t = gguf.MODEL_TENSOR
    return {
        t.V_ENC_INPUT_NORM: ((d,), (d,)),
        t.V_ENC_ATTN_Q: ((d, d), (d,)),
        t.V_ENC_ATTN_K: ((d, d), (d,)),
        t.V_ENC_ATTN_V: ((d, d), (d,)),
        t.V_ENC_ATTN_O: ((d, d), (d,)),
        t.V_ENC_POST_ATTN_NORM: ((d,), (d,)),
        t.V_ENC_FFN_UP: ((ff, d), (ff,)),
        t.V_ENC_FFN_DOWN: ((d, ff), (d,)),
    }


def add_layer_shapes(
    shapes: dict[str, tuple[int, ...]], per_layer: LayerShapes, bids: Iterable[int]
) -> None:
    """Add each block's weight and bias of every kind in ``per_layer`` to ``shapes``."""
    for bid in bids:
        for kind, (weight, bias) in per_layer.items():
            shapes[tensor_name(kind, "weight", bid)] = weight
            shapes[tensor_name(kind, "bias", bid)] = bias


def start_projector(
    path: Path, spec: VisionShape, *, name: str, projector_type: str
) -> gguf.GGUFWriter:
    """A writer for an mmproj file holding the keys every clip projector needs (F16,
    a vision encoder, its shapes, mean and std 0.5); the caller adds its own keys."""
    path.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(path, gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.MMPROJ])
    w.add_type(gguf.GGUFType.MMPROJ)
    w.add_name(name)
    w.add_file_type(int(gguf.LlamaFileType.MOSTLY_F16))
    w.add_clip_has_vision_encoder(True)
    w.add_clip_projector_type(projector_type)
    w.add_vision_image_size(spec.image_size)
    w.add_vision_patch_size(spec.patch_size)
    w.add_vision_embedding_length(spec.n_embd)
    w.add_vision_feed_forward_length(spec.n_ff)
    w.add_vision_block_count(spec.n_layer)
    w.add_vision_head_count(spec.n_head)
    w.add_vision_projection_dim(spec.text_n_embd)
    w.add_vision_attention_layernorm_eps(spec.eps)
    w.add_vision_image_mean([0.5, 0.5, 0.5])
    w.add_vision_image_std([0.5, 0.5, 0.5])
    return w


def add_flat(w: gguf.GGUFWriter, tname: str, shape: tuple[int, ...]) -> None:
    """A 1-D tensor in F32, as llama.cpp's converters write them: a norm's weight is
    one and a bias zero, so the random matrices alone decide what comes out."""
    fill = np.ones if tname.endswith(".weight") else np.zeros
    w.add_tensor(tname, fill(shape, dtype=np.float32))


def scaled_normal(rng: np.random.Generator, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
    """Seeded normal weights scaled by 1/sqrt(fan_in), so each output keeps unit scale."""
    return rng.standard_normal(shape, dtype=np.float32) / np.float32(np.sqrt(fan_in))


def start_text(path: Path, spec: TextShape, *, arch: gguf.MODEL_ARCH, name: str) -> gguf.GGUFWriter:
    """gguf_factory's start of an F16 decoder with the ChatML vocabulary and a 4096
    context; the caller adds its rope keys and ends with :func:`finish_text`."""
    return start_model(
        path, arch, name=name, file_type=FILE_TYPES["F16"], n_vocab=len(VOCAB.tokens),
        context_length=4096, n_embd=spec.text_n_embd, n_ff=spec.text_n_ff,
        n_layer=spec.text_n_layer, n_head=spec.text_n_head, n_head_kv=spec.text_n_head_kv,
    )  # fmt: skip


def finish_text(
    w: gguf.GGUFWriter, shapes: dict[str, tuple[int, ...]], rng: np.random.Generator
) -> None:
    """Add the tokenizer and ChatML template, then the seeded tensors (norms F32, the
    rest F16), and write the file. As with the tiny llama, the output rows of control
    and byte tokens are zero, so greedy replies are printable pieces and never end
    early: replies have exact lengths."""
    add_tokenizer(w, VOCAB)
    w.add_chat_template(CHATML_TEMPLATE)
    quiet = non_normal_rows(VOCAB)
    output = tensor_name(gguf.MODEL_TENSOR.OUTPUT, "weight")
    for tname, shape in shapes.items():
        if len(shape) == 1:
            add_flat(w, tname, shape)
            continue
        data = rng.standard_normal(shape, dtype=np.float32) * 0.05
        if tname == output:
            data[quiet] = 0.0
        w.add_tensor(tname, data.astype(np.float16))
    write_file(w)
