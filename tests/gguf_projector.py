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

from gguf_factory import write_file
from gguf_vision import (
    add_flat,
    add_layer_shapes,
    scaled_normal,
    start_projector,
    tensor_name,
    vit_block_shapes,
)


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


def tensor_shapes(spec: ProjectorSpec) -> dict[str, tuple[int, ...]]:
    """numpy shapes (ggml ne reversed) of every tensor the gemma3 projector reads."""
    t = gguf.MODEL_TENSOR
    d, p = spec.n_embd, spec.patch_size
    shapes: dict[str, tuple[int, ...]] = {
        tensor_name(t.V_ENC_EMBD_PATCH, "weight"): (d, 3, p, p),  # conv2d kernel
        tensor_name(t.V_ENC_EMBD_PATCH, "bias"): (d,),
        tensor_name(t.V_ENC_EMBD_POS, "weight"): (spec.n_patches, d),
        tensor_name(t.V_POST_NORM, "weight"): (d,),
        tensor_name(t.V_POST_NORM, "bias"): (d,),
        tensor_name(t.V_MM_SOFT_EMB_NORM, "weight"): (d,),
        # ne = [text_n_embd, n_embd]: libmtmd reads the text width from ne[0]
        tensor_name(t.V_MM_INP_PROJ, "weight"): (d, spec.text_n_embd),
    }
    add_layer_shapes(shapes, vit_block_shapes(d, spec.n_ff), range(spec.n_layer))
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
    rng = np.random.default_rng(seed)

    w = start_projector(path, spec, name=name, projector_type=projector_type)
    w.add_vision_use_gelu(True)
    w.add_vision_projector_scale_factor(spec.scale_factor)

    for tname, shape in tensor_shapes(spec).items():
        if len(shape) == 1:
            add_flat(w, tname, shape)
            continue
        # each matrix keeps its output's scale: the input projection sums over its
        # first numpy axis (libmtmd multiplies by its transpose), the rest over the others
        inp_proj = tname.startswith(gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.V_MM_INP_PROJ])
        data = scaled_normal(rng, shape, shape[0] if inp_proj else int(np.prod(shape[1:])))
        is_pos = tname.startswith(gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.V_ENC_EMBD_POS])
        w.add_tensor(tname, data if is_pos else data.astype(np.float16))
    write_file(w)
    return path
