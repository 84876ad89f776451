"""What the GUI chooses about the next worker: load knobs, the public endpoint, and
Settings → Models (how many models, their memory, the prompt cache).

Each fills in ``config.launch.LaunchSettings`` (the one definition of the worker's
launch settings), which the supervisor turns into the worker's argv.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hearth.config.launch import (
    DEFAULT_PORT,
    LAN_HOST,
    LOOPBACK_HOST,
    LaunchSettings,
    default_prompt_cache,
)
from hearth.config.settings import Settings
from hearth.core.model_info import FlashAttention, LoadConfig, SpecMode
from hearth.core.prompt_cache import GIB, PromptCacheSettings
from hearth.library.projectors import projector_beside


@dataclass(frozen=True)
class LoadOptions:
    """The GUI's load choices; None leaves the worker's own default."""

    n_ctx: int | None = None
    n_parallel: int | None = None
    n_gpu_layers: int | None = None
    n_threads: int | None = None
    cache_type_k: str | None = None  # "f16", "q8_0", ...
    cache_type_v: str | None = None
    flash_attention: str | None = None  # "auto", "on" or "off"
    use_mmap: bool = True  # False: read the whole file into memory (--no-mmap)
    use_mlock: bool = False  # True: keep the model locked in RAM (--mlock)
    chat_format: str | None = None  # a tool-call format name (--chat-format); None: detect
    # Speculative decoding: "off", "ngram" or "draft" (--spec; None: the worker's default)
    spec_mode: str | None = None
    draft_model: str | None = None  # the draft GGUF's path (--draft-model), for "draft"
    draft_max: int | None = None  # most tokens drafted per step (--draft-max)
    # Vision: a projector chosen by hand (--mmproj); None: the one paired beside the
    # model, if any. ``vision=False`` loads no projector at all (the model reads text).
    mmproj: str | None = None
    vision: bool = True

    def projector_for(self, model: Path) -> Path | None:
        """The projector loaded with ``model``: none with vision off, the file chosen,
        else the one beside it that pairs with it (a listing of its folder: file I/O)."""
        if not self.vision:
            return None
        if self.mmproj:
            return Path(self.mmproj)
        return projector_beside(model)

    def apply(self, load: LoadConfig) -> LoadConfig:
        """``load`` with these choices put in. A draft model is kept only with the
        "draft" mode (or no mode: then it implies "draft"), so switching to n-gram or off
        never leaves a second model loaded."""
        chosen: dict[str, Any] = {
            "n_ctx": self.n_ctx,
            "n_parallel": self.n_parallel,
            "n_gpu_layers": self.n_gpu_layers,
            "n_threads": self.n_threads,
            "cache_type_k": self.cache_type_k,
            "cache_type_v": self.cache_type_v,
            "flash_attention": (
                FlashAttention(self.flash_attention) if self.flash_attention else None
            ),
        }
        mode = SpecMode(self.spec_mode) if self.spec_mode else None
        if self.draft_model and mode in (None, SpecMode.DRAFT):
            chosen["draft_model_path"] = Path(self.draft_model)
        elif mode is not None:
            chosen["draft_model_path"] = None
        chosen["spec_mode"] = mode
        if self.draft_max is not None:
            chosen["draft_max"] = self.draft_max
            chosen["draft_min"] = min(load.draft_min, self.draft_max)
        keep_none = {"draft_model_path"}  # None there means "no draft model"
        return replace(
            load,
            **{k: v for k, v in chosen.items() if v is not None or k in keep_none},
            use_mmap=self.use_mmap,
            use_mlock=self.use_mlock,
            chat_format=self.chat_format,
        )


DEFAULT_ENDPOINT_PORT = DEFAULT_PORT


@dataclass(frozen=True)
class EndpointOptions:
    """The public endpoint. Off: a random loopback port that only the GUI's per-launch
    token opens. On: a fixed port (on every interface with ``lan``); loopback clients
    need one of the stored API keys only with ``require_key``, LAN clients always."""

    enabled: bool = False
    port: int = DEFAULT_ENDPOINT_PORT
    lan: bool = False
    require_key: bool = False

    @property
    def host(self) -> str:
        return LAN_HOST if self.enabled and self.lan else LOOPBACK_HOST

    @property
    def key_required(self) -> bool:
        return self.enabled and (self.lan or self.require_key)

    def apply(self, settings: LaunchSettings) -> LaunchSettings:
        """``settings`` with this endpoint's address and access rule."""
        if not self.enabled:  # off: only this launch's token opens the worker
            return replace(settings, host=LOOPBACK_HOST, port=0, endpoint_open=False)
        return replace(
            settings,
            host=self.host,
            port=self.port,
            endpoint_open=True,
            require_key=self.key_required,
        )


@dataclass(frozen=True)
class WorkerOptions:
    """Settings → Models, for every worker the app starts. None leaves the worker's
    default (the memory budget's: the fit estimator's; the prompt cache's size: 10% of
    the free space, at most 20 GiB)."""

    max_models: int | None = None
    memory_budget_bytes: int | None = None
    jit_ttl_s: float | None = None
    prompt_cache: PromptCacheSettings | None = None  # None: on, in the default folder

    @classmethod
    def from_settings(cls, s: Settings) -> WorkerOptions:
        base = default_prompt_cache()
        folder = Path(s.prompt_cache_folder) if s.prompt_cache_folder else base.folder
        max_gib = s.prompt_cache_max_gib
        cache = replace(
            base,
            folder=folder if s.prompt_cache_enabled else None,
            max_bytes=None if max_gib is None else round(max_gib * GIB),
        )
        return cls(
            max_models=s.max_models,
            memory_budget_bytes=(
                None if s.memory_budget_gib is None else round(s.memory_budget_gib * GIB)
            ),
            jit_ttl_s=None if s.jit_ttl_minutes is None else s.jit_ttl_minutes * 60.0,
            prompt_cache=cache,
        )

    @property
    def cache_folder(self) -> Path | None:
        """The prompt cache's folder these options name (None: off)."""
        return (self.prompt_cache or default_prompt_cache()).folder

    def apply(self, settings: LaunchSettings) -> LaunchSettings:
        """``settings`` with these choices put in (``--max-models``, ``--memory-budget``,
        ``--jit-ttl``, ``--prompt-cache``, ``--prompt-cache-max``)."""
        residency = settings.residency
        if self.max_models is not None:
            residency = replace(residency, max_models=self.max_models)
        if self.memory_budget_bytes is not None:
            residency = replace(residency, memory_budget_bytes=self.memory_budget_bytes)
        if self.jit_ttl_s is not None:
            residency = replace(residency, jit_ttl_s=self.jit_ttl_s)
        chosen: dict[str, Any] = {"residency": residency}
        if self.prompt_cache is not None:
            chosen["prompt_cache"] = self.prompt_cache
        return replace(settings, **chosen)
