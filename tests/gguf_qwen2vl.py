"""A tiny Qwen2-VL pair for tests: a ``qwen2vl`` text model and its ``qwen2vl_merger``
projector, both with seeded random weights.

Qwen2-VL, Qwen2.5-VL and Qwen3-VL give an image's embeddings positions on a 2D grid
(M-RoPE): every embedding of an image shares one temporal position and gets its row and
column as the other two, and the text after the image continues ``max(rows, cols)``
positions on, not one per embedding. The gemma3 pair (tests/gguf_projector.py) cannot
show any of that, so this module writes the smallest pair llama.cpp runs that way:

* the projector (``clip.projector_type = qwen2vl_merger``): the patch embedding as two
  convolution kernels (llama.cpp sums them for a still image), pre-norm ViT blocks with
  2D rotary positions (no learned position table), and the merger: 2x2 neighbouring
  patches concatenated, then ``mm.0`` -> GELU -> ``mm.2`` into the text width.
  pictures keep their size (rounded to multiples of 28 pixels: libmtmd holds Qwen
  pictures between 8 and 4096 merged tokens and ignores the file's
  ``image_max_pixels``), so the tests' small pictures are a few tokens each and an
  encode takes milliseconds on a CPU;
* the text model (``general.architecture = qwen2vl``): a Qwen2 decoder (biases on
  q/k/v) whose rotary dimensions are split into sections for the time, row and column
  positions (``qwen2vl.rope.dimension_sections``).

``qwen25=True`` writes Qwen2.5-VL's projector (``qwen2.5vl_merger``) instead: RMS norms,
a gated SiLU feed-forward, and window attention (every layer but each
``n_wa_pattern``-th attends within windows of ``window_size`` pixels, small enough
here that a picture spans several). The text model is the same ``qwen2vl`` for both.

Both share gguf_factory's vocabulary and ChatML template. Tensor names and keys come
from the ``gguf`` package's tables (llama.cpp's own), so they cannot drift.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np

from gguf_factory import VOCAB, write_file
from gguf_vision import (
    add_flat,
    add_layer_shapes,
    finish_text,
    scaled_normal,
    start_projector,
    start_text,
    tensor_name,
    vit_block_shapes,
)


@dataclass(frozen=True)
class Qwen2VLSpec:
    """The pair's shapes. Pictures are resized to multiples of ``2 * patch_size``
    (one merged token each). libmtmd bounds a Qwen picture by 8 to 4096 merged tokens
    of its own, not by ``min_pixels``/``max_pixels`` (written as converters write
    them): 80 x 120 pixels are a 3 x 4 grid, 448 x 448 a 16 x 16 one."""

    text_n_embd: int = 256
    text_n_ff: int = 512
    text_n_layer: int = 2
    text_n_head: int = 4
    text_n_head_kv: int = 2
    rope_sections: tuple[int, int, int, int] = (8, 12, 12, 0)  # sum: head_dim / 2
    n_embd: int = 64
    n_ff: int = 128
    n_layer: int = 2
    n_head: int = 4  # head width 16: four rotary sections of 4
    patch_size: int = 14
    image_size: int = 112
    min_pixels: int = 28 * 28 * 4
    max_pixels: int = 112 * 112
    eps: float = 1e-6
    window_size: int = 56  # Qwen2.5-VL only: 2 x 2 merged tokens per window
    n_wa_pattern: int = 2  # Qwen2.5-VL only: layer 1 of 0-1 attends to the whole image

    @property
    def text_head_dim(self) -> int:
        return self.text_n_embd // self.text_n_head


def projector_shapes(spec: Qwen2VLSpec, qwen25: bool = False) -> dict[str, tuple[int, ...]]:
    """numpy shapes (ggml ne reversed) of every tensor llama.cpp's merger reads."""
    t = gguf.MODEL_TENSOR
    d, ff, p, merged = spec.n_embd, spec.n_ff, spec.patch_size, spec.n_embd * 4
    patch = tensor_name(t.V_ENC_EMBD_PATCH, "weight")
    shapes: dict[str, tuple[int, ...]] = {
        patch: (d, 3, p, p),  # the temporal kernel's first frame ...
        patch + ".1": (d, 3, p, p),  # ... and its second (a still image feeds both)
        tensor_name(t.V_MMPROJ, "weight", 0): (merged, merged),
        tensor_name(t.V_MMPROJ, "bias", 0): (merged,),
        tensor_name(t.V_MMPROJ, "weight", 2): (spec.text_n_embd, merged),
        tensor_name(t.V_MMPROJ, "bias", 2): (spec.text_n_embd,),  # libmtmd's output width
    }
    per_layer = vit_block_shapes(d, ff)
    if qwen25:
        per_layer[t.V_ENC_FFN_GATE] = ((ff, d), (ff,))
    add_layer_shapes(shapes, per_layer, range(spec.n_layer))
    return shapes


def write_qwen2vl_projector(
    path: Path,
    spec: Qwen2VLSpec | None = None,
    *,
    seed: int = 0,
    qwen25: bool = False,
) -> Path:
    """Write the merger projector (F16 matrices, F32 norms and biases); same arguments,
    same bytes. Norm weights are one and biases zero: the random matrices decide what
    each picture becomes."""
    kinds = gguf.VisionProjectorType
    projector_type = kinds.QWEN25VL if qwen25 else kinds.QWEN2VL
    spec = spec or Qwen2VLSpec()
    path = Path(path)
    rng = np.random.default_rng(seed)

    w = start_projector(path, spec, name="Hearth Tiny Qwen2-VL Eyes", projector_type=projector_type)
    if qwen25:
        w.add_vision_use_silu(True)
        w.add_vision_window_size(spec.window_size)
        w.add_vision_n_wa_pattern(spec.n_wa_pattern)
    else:
        w.add_vision_use_gelu(True)
    w.add_vision_min_pixels(spec.min_pixels)
    w.add_vision_max_pixels(spec.max_pixels)

    for tname, shape in projector_shapes(spec, qwen25).items():
        if len(shape) == 1:
            add_flat(w, tname, shape)
            continue
        data = scaled_normal(rng, shape, int(np.prod(shape[1:])))
        w.add_tensor(tname, data.astype(np.float16))
    write_file(w)
    return path


def text_shapes(spec: Qwen2VLSpec, n_vocab: int) -> dict[str, tuple[int, ...]]:
    """numpy shapes of every tensor llama.cpp's qwen2vl text model reads."""
    t = gguf.MODEL_TENSOR
    d, ff = spec.text_n_embd, spec.text_n_ff
    kv = spec.text_n_head_kv * spec.text_head_dim
    shapes: dict[str, tuple[int, ...]] = {
        tensor_name(t.TOKEN_EMBD, "weight"): (n_vocab, d),
        tensor_name(t.OUTPUT_NORM, "weight"): (d,),
        tensor_name(t.OUTPUT, "weight"): (n_vocab, d),
    }
    per_layer: dict[str, tuple[gguf.MODEL_TENSOR, tuple[int, ...]]] = {
        "attn_norm": (t.ATTN_NORM, (d,)),
        "q": (t.ATTN_Q, (d, d)),
        "q_bias": (t.ATTN_Q, (d,)),
        "k": (t.ATTN_K, (kv, d)),
        "k_bias": (t.ATTN_K, (kv,)),
        "v": (t.ATTN_V, (kv, d)),
        "v_bias": (t.ATTN_V, (kv,)),
        "out": (t.ATTN_OUT, (d, d)),
        "ffn_norm": (t.FFN_NORM, (d,)),
        "gate": (t.FFN_GATE, (ff, d)),
        "up": (t.FFN_UP, (ff, d)),
        "down": (t.FFN_DOWN, (d, ff)),
    }
    for bid in range(spec.text_n_layer):
        for role, (kind, shape) in per_layer.items():
            suffix = "bias" if role.endswith("_bias") else "weight"
            shapes[tensor_name(kind, suffix, bid)] = shape
    return shapes


def write_qwen2vl_text(path: Path, spec: Qwen2VLSpec | None = None, *, seed: int = 0) -> Path:
    """Write the text model (F16, seeded, gguf_vision's quiet output rows); same
    arguments, same bytes."""
    spec = spec or Qwen2VLSpec()
    assert sum(spec.rope_sections) * 2 == spec.text_head_dim
    path = Path(path)
    rng = np.random.default_rng(seed)
    w = start_text(path, spec, arch=gguf.MODEL_ARCH.QWEN2VL, name="Hearth Tiny Qwen2-VL")
    w.add_rope_dimension_count(spec.text_head_dim)
    w.add_rope_dimension_sections(list(spec.rope_sections))
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-6)
    finish_text(w, text_shapes(spec, len(VOCAB.tokens)), rng)
    return path


def write_qwen2vl_pair(
    directory: Path, *, seed: int = 0, qwen25: bool = False
) -> tuple[Path, Path]:
    """The text model and its projector, named as a download would name them."""
    spec = Qwen2VLSpec()
    name = "Tiny-Qwen2.5-VL" if qwen25 else "Tiny-Qwen2-VL"
    model = write_qwen2vl_text(directory / f"{name}-F16.gguf", spec, seed=seed)
    projector = write_qwen2vl_projector(directory / f"mmproj-{name}-F16.gguf", spec, qwen25=qwen25)
    return model, projector
