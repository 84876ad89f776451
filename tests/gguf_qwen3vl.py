"""A tiny Qwen3-VL pair for tests: a ``qwen3vl`` text model and its ``qwen3vl_merger``
projector with deepstack layers, both with seeded random weights.

Qwen3-VL places an image on the same M-RoPE grid as Qwen2-VL (tests/gguf_qwen2vl.py),
but two things differ, and both change what the engine must get right:

* **deepstack**: some vision blocks (``spec.deepstack_layers``) feed a merger of their
  own (``v.deepstack.N.{norm,fc1,fc2}``), and libmtmd concatenates those outputs to the
  main merger's along the feature axis. An image embedding is then
  ``text_n_embd * (1 + n_deepstack)`` wide, and the text model (which says
  ``qwen3vl.n_deepstack_layers``) reads that wider input (``llama_model_n_embd_inp``),
  adding slice k + 1 to the output of its layer k. A token's embedding stays
  ``text_n_embd`` wide;
* **interleaved M-RoPE**: the text arch ``qwen3vl`` rotates the time, row and column
  sections interleaved over the head's dimensions rather than in blocks.

The projector, as llama.cpp's ``clip_graph_qwen3vl`` reads it: the patch embedding as
two convolution kernels plus a bias, a learned position table (``image_size /
patch_size`` on a side, resized to each picture's grid), layer-normed ViT blocks with a
fused ``attn_qkv`` and 2D rotary positions, ``v.post_ln``, then 2x2 neighbouring
patches concatenated into ``mm.0`` -> GELU -> ``mm.2``. The text model is a Qwen3
decoder (RMS norms on q and k, no biases).

Vocabulary, template, names and the common writing steps are the Qwen2-VL pair's
(tests/gguf_vision.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np

from gguf_factory import VOCAB, write_file
from gguf_vision import (
    LayerShapes,
    add_flat,
    add_layer_shapes,
    finish_text,
    scaled_normal,
    start_projector,
    start_text,
    tensor_name,
)


@dataclass(frozen=True)
class Qwen3VLSpec:
    """The pair's shapes. Pictures become grids of merged tokens as for the Qwen2-VL
    pair (multiples of ``2 * patch_size``, 8 to 4096 tokens whatever ``max_pixels``
    says). Each image embedding is ``text_n_embd * (1 + len(deepstack_layers))`` wide."""

    text_n_embd: int = 256
    text_n_ff: int = 512
    text_n_layer: int = 3  # more than the deepstack layers: see below
    text_n_head: int = 4
    text_n_head_kv: int = 2
    rope_sections: tuple[int, int, int, int] = (8, 12, 12, 0)  # sum: head_dim / 2
    n_embd: int = 64
    n_ff: int = 128
    n_layer: int = 3
    n_head: int = 4  # head width 16: four rotary sections of 4
    deepstack_layers: tuple[int, ...] = (0, 1)  # vision blocks with a merger of their own
    patch_size: int = 14
    image_size: int = 112  # the position table: 8 x 8 patches, resized per picture
    min_pixels: int = 28 * 28 * 4
    max_pixels: int = 112 * 112
    eps: float = 1e-6
    n_expert: int = 4  # the MoE text model (qwen3vlmoe) only
    n_expert_used: int = 2
    n_ff_exp: int = 128

    @property
    def text_head_dim(self) -> int:
        return self.text_n_embd // self.text_n_head

    @property
    def n_embd_inp(self) -> int:
        """The width of one image embedding, and of the text model's input."""
        return self.text_n_embd * (1 + len(self.deepstack_layers))


def projector_shapes(spec: Qwen3VLSpec) -> dict[str, tuple[int, ...]]:
    """numpy shapes (ggml ne reversed) of every tensor llama.cpp's qwen3vl merger reads."""
    t = gguf.MODEL_TENSOR
    d, ff, p, merged = spec.n_embd, spec.n_ff, spec.patch_size, spec.n_embd * 4
    side = spec.image_size // spec.patch_size
    patch = tensor_name(t.V_ENC_EMBD_PATCH, "weight")
    shapes: dict[str, tuple[int, ...]] = {
        patch: (d, 3, p, p),  # the temporal kernel's first frame ...
        patch + ".1": (d, 3, p, p),  # ... and its second (a still image feeds both)
        tensor_name(t.V_ENC_EMBD_PATCH, "bias"): (d,),
        tensor_name(t.V_ENC_EMBD_POS, "weight"): (side * side, d),
        tensor_name(t.V_POST_NORM, "weight"): (d,),
        tensor_name(t.V_POST_NORM, "bias"): (d,),
        tensor_name(t.V_MMPROJ, "weight", 0): (merged, merged),
        tensor_name(t.V_MMPROJ, "bias", 0): (merged,),
        tensor_name(t.V_MMPROJ, "weight", 2): (spec.text_n_embd, merged),
        tensor_name(t.V_MMPROJ, "bias", 2): (spec.text_n_embd,),
    }
    per_layer: LayerShapes = {
        t.V_ENC_INPUT_NORM: ((d,), (d,)),
        t.V_ENC_ATTN_QKV: ((3 * d, d), (3 * d,)),
        t.V_ENC_ATTN_O: ((d, d), (d,)),
        t.V_ENC_POST_ATTN_NORM: ((d,), (d,)),
        t.V_ENC_FFN_UP: ((ff, d), (ff,)),
        t.V_ENC_FFN_DOWN: ((d, ff), (d,)),
    }
    deepstack: LayerShapes = {
        t.V_DS_NORM: ((merged,), (merged,)),
        t.V_DS_FC1: ((merged, merged), (merged,)),
        t.V_DS_FC2: ((spec.text_n_embd, merged), (spec.text_n_embd,)),
    }
    for bid in range(spec.n_layer):
        add_layer_shapes(shapes, per_layer, [bid])
        if bid in spec.deepstack_layers:
            add_layer_shapes(shapes, deepstack, [bid])
    return shapes


def write_qwen3vl_projector(path: Path, spec: Qwen3VLSpec | None = None, *, seed: int = 0) -> Path:
    """Write the merger projector (F16 matrices; F32 norms, biases and the position
    table, which libmtmd resizes per picture); same arguments, same bytes. Norm weights
    are one and biases zero: the random matrices decide what each picture becomes."""
    spec = spec or Qwen3VLSpec()
    path = Path(path)
    rng = np.random.default_rng(seed)

    projector_type = gguf.VisionProjectorType.QWEN3VL
    w = start_projector(path, spec, name="Hearth Tiny Qwen3-VL Eyes", projector_type=projector_type)
    w.add_vision_use_gelu(True)
    w.add_vision_spatial_merge_size(2)
    w.add_vision_is_deepstack_layers([b in spec.deepstack_layers for b in range(spec.n_layer)])
    w.add_vision_min_pixels(spec.min_pixels)
    w.add_vision_max_pixels(spec.max_pixels)

    position = tensor_name(gguf.MODEL_TENSOR.V_ENC_EMBD_POS, "weight")
    for tname, shape in projector_shapes(spec).items():
        if tname == position:
            table = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.5)
            w.add_tensor(tname, table)
            continue
        if len(shape) == 1:
            add_flat(w, tname, shape)
            continue
        data = scaled_normal(rng, shape, int(np.prod(shape[1:])))
        w.add_tensor(tname, data.astype(np.float16))
    write_file(w)
    return path


def text_shapes(spec: Qwen3VLSpec, n_vocab: int, moe: bool = False) -> dict[str, tuple[int, ...]]:
    """numpy shapes of every tensor llama.cpp's qwen3vl (or, ``moe``, qwen3vlmoe) text
    model reads."""
    t = gguf.MODEL_TENSOR
    d, ff, hd = spec.text_n_embd, spec.text_n_ff, spec.text_head_dim
    kv = spec.text_n_head_kv * hd
    shapes: dict[str, tuple[int, ...]] = {
        tensor_name(t.TOKEN_EMBD, "weight"): (n_vocab, d),
        tensor_name(t.OUTPUT_NORM, "weight"): (d,),
        tensor_name(t.OUTPUT, "weight"): (n_vocab, d),
    }
    per_layer: dict[gguf.MODEL_TENSOR, tuple[int, ...]] = {
        t.ATTN_NORM: (d,),
        t.ATTN_Q: (d, d),
        t.ATTN_Q_NORM: (hd,),
        t.ATTN_K: (kv, d),
        t.ATTN_K_NORM: (hd,),
        t.ATTN_V: (kv, d),
        t.ATTN_OUT: (d, d),
        t.FFN_NORM: (d,),
    }
    if moe:
        n, fe = spec.n_expert, spec.n_ff_exp
        per_layer |= {
            t.FFN_GATE_INP: (n, d),  # the router
            t.FFN_GATE_EXP: (n, fe, d),
            t.FFN_UP_EXP: (n, fe, d),
            t.FFN_DOWN_EXP: (n, d, fe),
        }
    else:
        per_layer |= {t.FFN_GATE: (ff, d), t.FFN_UP: (ff, d), t.FFN_DOWN: (d, ff)}
    for bid in range(spec.text_n_layer):
        for kind, shape in per_layer.items():
            shapes[tensor_name(kind, "weight", bid)] = shape
    return shapes


def write_qwen3vl_text(
    path: Path,
    spec: Qwen3VLSpec | None = None,
    *,
    seed: int = 0,
    moe: bool = False,
    malformed: bool = False,
) -> Path:
    """Write the text model (F16, seeded, gguf_vision's quiet output rows); same
    arguments, same bytes. ``moe`` writes
    Qwen3-VL's mixture-of-experts decoder (``qwen3vlmoe``: a router and
    ``n_expert`` feed-forward experts per layer, ``n_expert_used`` of them per token)."""
    spec = spec or Qwen3VLSpec()
    assert sum(spec.rope_sections) * 2 == spec.text_head_dim
    # llama.cpp's qwen3vl graph adds a deepstack slice after the last layer has kept
    # only the rows that want logits, a shape mismatch (GGML_ASSERT) when that last
    # layer takes one; real models have far more layers than deepstack slices (the
    # engine refuses such a file: ``malformed`` writes one for that test)
    assert malformed or len(spec.deepstack_layers) < spec.text_n_layer
    path = Path(path)
    rng = np.random.default_rng(seed)
    arch = gguf.MODEL_ARCH.QWEN3VLMOE if moe else gguf.MODEL_ARCH.QWEN3VL
    name = "Hearth Tiny Qwen3-VL-MoE" if moe else "Hearth Tiny Qwen3-VL"
    w = start_text(path, spec, arch=arch, name=name)
    w.add_key_length(spec.text_head_dim)
    w.add_value_length(spec.text_head_dim)
    w.add_rope_dimension_count(spec.text_head_dim)
    w.add_rope_dimension_sections(list(spec.rope_sections))
    w.add_num_deepstack_layers(len(spec.deepstack_layers))
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-6)
    if moe:
        w.add_expert_count(spec.n_expert)
        w.add_expert_used_count(spec.n_expert_used)
        w.add_expert_feed_forward_length(spec.n_ff_exp)
    finish_text(w, text_shapes(spec, len(VOCAB.tokens), moe), rng)
    return path


def write_qwen3vl_pair(directory: Path, *, seed: int = 0, moe: bool = False) -> tuple[Path, Path]:
    """The text model and its projector, named as a download would name them."""
    spec = Qwen3VLSpec()
    name = "Tiny-Qwen3-VL-MoE" if moe else "Tiny-Qwen3-VL"
    model = write_qwen3vl_text(directory / f"{name}-F16.gguf", spec, seed=seed, moe=moe)
    projector = write_qwen3vl_projector(directory / f"mmproj-{name}-F16.gguf", spec)
    return model, projector
