"""Descriptions of a loaded model and of how to load one."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path

DEFAULT_CONTEXT = 4096
"""Context per slot when none is asked for (capped by the model's trained context)."""


class SplitMode(str, Enum):
    """How a model is split across several GPUs (llama.cpp's ``--split-mode``)."""

    NONE = "none"
    LAYER = "layer"
    ROW = "row"


@dataclass(frozen=True)
class ComputeDevice:
    """A device llama.cpp can run on, as ggml reports it."""

    name: str
    description: str
    kind: str  # cpu | gpu | igpu | accel
    memory_free: int
    memory_total: int


class FlashAttention(str, Enum):
    AUTO = "auto"
    ON = "on"
    OFF = "off"


@dataclass(frozen=True)
class LoadConfig:
    """Every llama.cpp knob Hearth exposes for loading a model.

    ``n_ctx`` is the context per slot; the engine allocates ``n_ctx * n_parallel``.
    ``n_ctx = None`` means "the default": ``DEFAULT_CONTEXT``, or the model's trained
    context if that is smaller (see ``context_for``), so a default load never goes past
    what the model was trained on. An explicit value is honoured, even a larger one.
    ``n_threads = 0`` lets the engine pick from the physical core count.
    """

    model_path: Path
    n_ctx: int | None = None
    n_parallel: int = 4
    n_gpu_layers: int = -1
    main_gpu: int = 0
    split_mode: SplitMode = SplitMode.LAYER
    tensor_split: tuple[float, ...] = ()
    n_threads: int = 0
    n_threads_batch: int = 0
    n_batch: int = 2048
    n_ubatch: int = 512
    flash_attention: FlashAttention = FlashAttention.AUTO
    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    use_mmap: bool = True
    use_mlock: bool = False
    kv_unified: bool = False
    max_queue: int = 64

    def context_for(self, n_ctx_train: int) -> int:
        """The context per slot this load gets for a model trained on ``n_ctx_train``
        tokens (0: unknown, as some GGUFs do not say)."""
        if self.n_ctx is not None:
            return self.n_ctx
        return min(DEFAULT_CONTEXT, n_ctx_train) if n_ctx_train > 0 else DEFAULT_CONTEXT


@dataclass(frozen=True)
class ModelInfo:
    """What clients may know about the loaded model."""

    id: str
    path: Path
    architecture: str
    n_params: int
    size_bytes: int
    quantization: str
    n_ctx_train: int
    n_ctx_per_slot: int
    n_slots: int
    n_vocab: int
    chat_template: str | None
    has_fim: bool
    created: int
    n_layer: int = 0
    gpu_layers: int = 0
    devices: tuple[ComputeDevice, ...] = ()
