"""A tiny, reproducible vision projector (mmproj) GGUF for tests.

Vision tests need a real projector that real libmtmd loads and runs, offline and in
seconds. llama.cpp's ``gemma3`` projector is the simplest it knows: a small ViT (a patch
embedding, learned position embeddings, pre-norm transformer blocks, a final layer
norm), then an average pool over ``scale_factor`` x ``scale_factor`` patches, an RMS
norm (``mm.soft_emb_norm``) and one matrix (``mm.input_projection``) into the text
model's embedding width. This module writes one with seeded random weights; paired with
gguf_factory's tiny llama of the same ``text_n_embd``, libmtmd accepts the two as a
vision model.

Tensor names and metadata keys are llama.cpp's (tools/mtmd/clip-impl.h), taken from the
``gguf`` package's own tables so the two cannot drift.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np


@dataclass(frozen=True)
class ProjectorSpec:
    """The projector's shape; the defaults give 9 image tokens per picture.

    ``image_size`` / ``patch_size`` patches per side (6), pooled ``scale_factor`` by
    ``scale_factor`` (2), so (6 / 2)² = 9 embeddings per image, each ``text_n_embd``
    wide. ``n_ff`` differs from ``n_embd`` on purpose: llama.cpp swaps a gemma3 FFN's
    up and down matrices when down's rows are n_embd long (old converters wrote them
    swapped), and a square FFN could not tell the two apart.
    """

    text_n_embd: int = 256
    n_embd: int = 64
    n_ff: int = 128
    n_layer: int = 2
    n_head: int = 4
    image_size: int = 96
    patch_size: int = 16
    scale_factor: int = 2
    eps: float = 1e-6

    @property
    def n_patches(self) -> int:
        return (self.image_size // self.patch_size) ** 2

    @property
    def n_image_tokens(self) -> int:
        side = self.image_size // self.patch_size // self.scale_factor
        return side * side


def _name(kind: gguf.MODEL_TENSOR, suffix: str, bid: int = 0) -> str:
    return gguf.TENSOR_NAMES[kind].format(bid=bid) + "." + suffix


def tensor_shapes(spec: ProjectorSpec) -> dict[str, tuple[int, ...]]:
    """numpy shapes (ggml ne reversed) of every tensor the gemma3 projector reads."""
    t = gguf.MODEL_TENSOR
    d, ff, p = spec.n_embd, spec.n_ff, spec.patch_size
    shapes: dict[str, tuple[int, ...]] = {
        _name(t.V_ENC_EMBD_PATCH, "weight"): (d, 3, p, p),  # conv2d kernel
        _name(t.V_ENC_EMBD_PATCH, "bias"): (d,),
        _name(t.V_ENC_EMBD_POS, "weight"): (spec.n_patches, d),
        _name(t.V_POST_NORM, "weight"): (d,),
        _name(t.V_POST_NORM, "bias"): (d,),
        _name(t.V_MM_SOFT_EMB_NORM, "weight"): (d,),
        # ne = [text_n_embd, n_embd]: libmtmd reads the text width from ne[0]
        _name(t.V_MM_INP_PROJ, "weight"): (d, spec.text_n_embd),
    }
    per_layer: dict[gguf.MODEL_TENSOR, tuple[tuple[int, ...], tuple[int, ...]]] = {
        t.V_ENC_INPUT_NORM: ((d,), (d,)),
        t.V_ENC_ATTN_Q: ((d, d), (d,)),
        t.V_ENC_ATTN_K: ((d, d), (d,)),
        t.V_ENC_ATTN_V: ((d, d), (d,)),
        t.V_ENC_ATTN_O: ((d, d), (d,)),
        t.V_ENC_POST_ATTN_NORM: ((d,), (d,)),
        t.V_ENC_FFN_UP: ((ff, d), (ff,)),
        t.V_ENC_FFN_DOWN: ((d, ff), (d,)),
    }
    for bid in range(spec.n_layer):
        for kind, (weight, bias) in per_layer.items():
            shapes[_name(kind, "weight", bid)] = weight
            shapes[_name(kind, "bias", bid)] = bias
    return shapes


def write_projector(
    path: Path,
    spec: ProjectorSpec | None = None,
    *,
    seed: int = 0,
    name: str = "Hearth Eyes",
    projector_type: str = gguf.VisionProjectorType.GEMMA3,
) -> Path:
    """Write a gemma3-type projector with seeded random weights; same arguments, same
    bytes. Norm weights are one and their biases zero, so the random matrices decide
    what each picture becomes; matrices are F16 as converters write them. Another
    ``projector_type`` labels the same tensors as something else (a file libmtmd must
    refuse)."""
    spec = spec or ProjectorSpec()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)

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
    w.add_vision_use_gelu(True)
    w.add_vision_projector_scale_factor(spec.scale_factor)

    for tname, shape in tensor_shapes(spec).items():
        if len(shape) == 1:  # norms and biases stay F32, as llama.cpp's converters write them
            ones = tname.endswith(".weight")
            w.add_tensor(tname, (np.ones if ones else np.zeros)(shape, dtype=np.float32))
            continue
        # each matrix keeps its output's scale: the input projection sums over its
        # first numpy axis (libmtmd multiplies by its transpose), the rest over the others
        inp_proj = tname.startswith(gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.V_MM_INP_PROJ])
        fan_in = shape[0] if inp_proj else int(np.prod(shape[1:]))
        data = rng.standard_normal(shape, dtype=np.float32) / np.float32(np.sqrt(fan_in))
        is_pos = tname.startswith(gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.V_ENC_EMBD_POS])
        w.add_tensor(tname, data if is_pos else data.astype(np.float16))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
