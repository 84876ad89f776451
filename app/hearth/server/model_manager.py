"""Which model answers a request: the loaded one, or one from the library loaded just in
time (JIT), and unloading after an idle time-to-live.

Clients name models freely (IDE plugins keep their own list), so a request that names a
library model switches to it, as in LM Studio and Ollama. Requests still running on the
previous model end as cancelled when it is swapped out.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from hearth.core.errors import ModelNotFoundError, ModelNotLoadedError
from hearth.core.model_info import LoadConfig, ModelInfo
from hearth.engine.engine import Engine, LoadState

log = logging.getLogger(__name__)

_LOAD_WAIT_POLL_S = 0.05
_CATALOG_CACHE_S = 5.0


@dataclass(frozen=True)
class CatalogEntry:
    """A model the worker could load: its client-facing id and its file."""

    id: str
    path: Path
    size_bytes: int
    quantization: str | None
    architecture: str | None
    created: int


class ModelCatalog(Protocol):
    def entries(self) -> list[CatalogEntry]: ...

    def find(self, requested: str) -> CatalogEntry | None: ...


class LibraryCatalog:
    """The user's library (hearth.library), re-scanned at most every few seconds."""

    def __init__(self) -> None:
        from hearth.library.library import Library

        self._library = Library()
        self._cached: tuple[float, list[CatalogEntry]] | None = None

    def entries(self) -> list[CatalogEntry]:
        now = time.monotonic()
        if self._cached and now - self._cached[0] < _CATALOG_CACHE_S:
            return self._cached[1]
        result = []
        for model in self._library.models():
            if not model.ok or model.kind != "model":
                continue
            meta = model.metadata
            result.append(
                CatalogEntry(
                    id=model.id.removesuffix(".gguf"),
                    path=model.path,
                    size_bytes=model.size_bytes,
                    quantization=meta.quantization if meta else None,
                    architecture=meta.architecture if meta else None,
                    created=int(model.path.stat().st_mtime) if model.path.exists() else 0,
                )
            )
        self._cached = (now, result)
        return result

    def find(self, requested: str) -> CatalogEntry | None:
        name = requested.removesuffix(":latest")
        model = self._library.get(name)
        if model is None or not model.ok:
            return None
        return next((e for e in self.entries() if e.path == model.path), None)


def model_matches(info: ModelInfo, requested: str) -> bool:
    """Accept the id, the file name, the path, and Ollama-style ``id:latest``."""
    name = requested.removesuffix(":latest")
    return name in (info.id, info.path.name, str(info.path))


class ModelManager:
    def __init__(
        self,
        engine: Engine,
        *,
        catalog: ModelCatalog | None,
        base_config: LoadConfig,
        ttl_s: float | None = None,
    ) -> None:
        self.engine = engine
        self.catalog = catalog
        self.base_config = base_config
        self.ttl_s = ttl_s
        self._lock = asyncio.Lock()
        self._last_used = time.monotonic()
        self._in_use = 0

    def touch(self) -> None:
        self._last_used = time.monotonic()

    @contextlib.contextmanager
    def in_use(self) -> Iterator[None]:
        """Count a request that uses the model; an idle unload waits for none to remain."""
        self._in_use += 1
        try:
            yield
        finally:
            self._in_use -= 1
            self.touch()

    def available(self) -> list[CatalogEntry]:
        """Library models other than the loaded one (which ModelInfo describes)."""
        entries = self.catalog.entries() if self.catalog is not None else []
        info = self.engine.info
        return [e for e in entries if info is None or e.path != info.path]

    def lookup(self, requested: str) -> ModelInfo | CatalogEntry:
        """Describe a model without loading it."""
        info = self.engine.info
        if info is not None and model_matches(info, requested):
            return info
        entry = self.catalog.find(requested) if self.catalog is not None else None
        if entry is None:
            raise ModelNotFoundError(self._not_found_message(requested))
        return entry

    async def resolve(self, requested: str | None) -> ModelInfo:
        """The model to serve ``requested`` with, loading it first when needed."""
        self.touch()
        await self._wait_for_load()
        async with self._lock:  # an idle unload in progress finishes first
            pass
        info = self.engine.info
        if info is not None and (not requested or model_matches(info, requested)):
            return info
        last = self.engine.config
        if not requested or (last is not None and _config_matches(last, requested)):
            if last is None or self.engine.state.state is LoadState.ERROR:
                raise ModelNotLoadedError(_not_loaded_message(self.engine))
            return await self._load(last)  # unloaded after its time-to-live: reload
        entry = self.catalog.find(requested) if self.catalog is not None else None
        if entry is None:
            raise ModelNotFoundError(self._not_found_message(requested))
        base = last or self.base_config
        return await self._load(dataclasses.replace(base, model_path=entry.path))

    async def _load(self, config: LoadConfig) -> ModelInfo:
        async with self._lock:
            info = self.engine.info
            if info is not None and info.path == Path(config.model_path):
                return info
            log.info("loading %s on demand", config.model_path)
            return await asyncio.to_thread(self.engine.load, config)

    async def _wait_for_load(self) -> None:
        while self.engine.state.state is LoadState.LOADING:  # noqa: ASYNC110 (set by a thread)
            await asyncio.sleep(_LOAD_WAIT_POLL_S)

    def _not_found_message(self, requested: str) -> str:
        available = [e.id for e in self.catalog.entries()] if self.catalog else []
        info = self.engine.info
        if info is not None and info.id not in available:
            available.insert(0, info.id)
        names = ", ".join(f"'{n}'" for n in available[:10]) or "none"
        return (
            f"The model '{requested}' is not loaded and not in the library. "
            f"Available: {names}. See GET /v1/models."
        )

    def keep_alive(self, seconds: float | None) -> None:
        """Ollama's ``keep_alive`` from the last request: 0 unloads as soon as the model
        is idle, a negative value keeps it loaded, None leaves the setting as it is."""
        if seconds is None:
            return
        self.ttl_s = None if seconds < 0 else seconds
        self.touch()

    async def expire_idle(self) -> None:
        """Run forever: unload the model once it has been idle for ``ttl_s``."""
        while True:
            ttl = self.ttl_s
            await asyncio.sleep(0.5 if ttl is None else max(0.05, min(ttl / 4, 5.0)))
            ttl = self.ttl_s
            if ttl is None or self.engine.status() is None:
                continue
            async with self._lock:
                status = self.engine.status()
                if status is None:
                    continue
                if self._in_use or any(s.busy for s in status.slots) or status.queue_depth:
                    self.touch()
                    continue
                if time.monotonic() - self._last_used >= ttl:
                    log.info("unloading the model after %.0f s idle", ttl)
                    await asyncio.to_thread(self.engine.unload)


def _config_matches(config: LoadConfig, requested: str) -> bool:
    path = Path(config.model_path)
    name = requested.removesuffix(":latest")
    return name in (path.stem, path.name, str(path))


def _not_loaded_message(engine: Engine) -> str:
    state = engine.state
    if state.state is LoadState.ERROR:
        return f"The model failed to load: {state.error}"
    return "No model is loaded. Name a model from GET /v1/models, or load one first."
