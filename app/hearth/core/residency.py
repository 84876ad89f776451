"""The models a worker holds at once, and the limits they live under.

Plain values shared by the worker (``server/residency.py``, which owns the set of loaded
models), the wire codecs that report them, and the app (``supervisor/client.py``), which
shows each loaded model with its memory, busy slots and expiry.
"""

from __future__ import annotations

from dataclasses import dataclass

from hearth.core.errors import ModelNotLoadedError
from hearth.core.model_info import ModelInfo

DEFAULT_MAX_MODELS = 3
"""Models loaded at once when ``--max-models`` is not given (Ollama's per-GPU default)."""

DEFAULT_JIT_TTL_S = 600.0
"""How long a model loaded just in time stays loaded once idle (10 minutes)."""

DEFAULT_LOAD_QUEUE_TIMEOUT_S = 60.0
"""How long a request waits for memory held by busy models before a 503."""

DEFAULT_LOAD_QUEUE_SIZE = 16
"""How many requests may wait for memory at once; more are answered 503 at once."""


@dataclass(frozen=True)
class LoadedModel:
    """One model resident in the worker.

    ``memory_bytes`` is the model's resident size with its draft model: the estimate
    before the load, replaced by the measured growth of the process once loaded.
    ``pinned`` models were loaded by the user and stay until ejected or their TTL;
    others were loaded just in time, and only they are ever evicted.
    """

    info: ModelInfo
    memory_bytes: int
    busy_slots: int
    pinned: bool
    expires_at: float | None  # epoch seconds; None = no expiry


@dataclass(frozen=True)
class ResidencyLimits:
    """How many models may be loaded at once, and how much memory they may hold."""

    max_models: int
    memory_budget_bytes: int


@dataclass(frozen=True)
class ResidencySettings:
    """How the worker is told to hold models (``hearth serve`` flags, the app's Settings →
    Models): ``memory_budget_bytes`` None takes the budget from the fit estimator (RAM
    plus VRAM, less headroom) when the worker starts; ``jit_ttl_s`` None keeps models
    loaded just in time until evicted."""

    max_models: int = DEFAULT_MAX_MODELS
    memory_budget_bytes: int | None = None
    jit_ttl_s: float | None = DEFAULT_JIT_TTL_S
    load_queue_timeout_s: float = DEFAULT_LOAD_QUEUE_TIMEOUT_S
    load_queue_size: int = DEFAULT_LOAD_QUEUE_SIZE


class PinnedModelsError(ModelNotLoadedError):
    """A model can't be loaded beside the pinned ones (the user's, kept until ejected
    or their TTL) and evicting models loaded just in time would not make room. Waiting
    would not help either, so it is refused at once (503, no ``Retry-After``), naming
    the pinned models and how to free their memory."""

    code = "models_pinned"

    def __init__(self, message: str, pinned: tuple[str, ...]) -> None:
        super().__init__(message)
        self.pinned = pinned
