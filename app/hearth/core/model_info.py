"""Descriptions of a loaded model and of how to load one."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from hearth.core import chat_formats

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


CHAT_FORMATS = chat_formats.CHAT_FORMATS
"""The chat formats a load may choose instead of detection (``LoadConfig.chat_format``),
defined with how each is detected in ``core/chat_formats.py``."""


class SpecMode(str, Enum):
    """Where speculative decoding's drafts come from (``--spec``)."""

    NGRAM = "ngram"  # the slot's own prompt and output: no second model
    DRAFT = "draft"  # a small draft model (``draft_model_path``)
    OFF = "off"


DEFAULT_SPEC = SpecMode.OFF
"""Speculation without a draft model: off until measurements show n-gram never loses
(docs/benchmarks.md, "Speculative decoding")."""


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
    # Speculative decoding. spec_mode None: "draft" with a draft model, else DEFAULT_SPEC.
    draft_model_path: Path | None = None
    spec_mode: SpecMode | None = None
    draft_max: int = 16
    draft_min: int = 1
    # The chat family's tool-call format (one of CHAT_FORMATS); None: detect it from the
    # chat template and vocabulary. For models whose template detection gets wrong.
    chat_format: str | None = None
    # A vision projector (mmproj GGUF) loaded beside the model, so it reads images.
    mmproj_path: Path | None = None

    @property
    def speculation(self) -> SpecMode:
        """The speculation this load runs with."""
        if self.spec_mode is not None:
            return self.spec_mode
        return SpecMode.DRAFT if self.draft_model_path is not None else DEFAULT_SPEC

    def problems(self) -> list[str]:
        """What makes these settings unusable, worded with the field names (the CLI
        names its flags instead: ``server/options.py``). One check, for every way a
        load is asked for: ``hearth serve``, the app, ``POST /hearth/v1/load``."""
        found = []
        if self.n_ctx is not None and self.n_ctx < 16:
            found.append("n_ctx must be at least 16 tokens.")
        if not 1 <= self.n_parallel <= 64:
            found.append("n_parallel must be between 1 and 64.")
        if self.n_batch < 1 or self.n_ubatch < 1:
            found.append("n_batch and n_ubatch must be positive.")
        elif self.n_batch < self.n_parallel:
            found.append("n_batch must be at least n_parallel: each decoding slot adds a token.")
        if self.n_threads < 0 or self.n_threads_batch < 0:
            found.append("n_threads must be 0 (automatic) or more.")
        if not 1 <= self.draft_min <= self.draft_max:
            found.append("draft_min must be at least 1, and draft_max at least draft_min.")
        if self.spec_mode is SpecMode.DRAFT and self.draft_model_path is None:
            found.append("spec_mode draft needs a draft_model_path.")
        if self.chat_format is not None and self.chat_format not in CHAT_FORMATS:
            found.append(
                f"chat_format must be one of {', '.join(CHAT_FORMATS)} (or unset to detect)."
            )
        return found

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
    vision: bool = False
    """A vision projector (mmproj) is loaded with the model, so it takes images."""
