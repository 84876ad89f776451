"""The models a worker could serve: the user's library, and how a request names one."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from hearth.core.model_info import ModelInfo
from hearth.library.projectors import projector_beside

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
    projector: Path | None = None  # the vision projector beside it, loaded with it


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
                    projector=projector_beside(model.path),
                )
            )
        self._cached = (now, result)
        return result

    def find(self, requested: str) -> CatalogEntry | None:
        """The library model a client means; names only, never paths outside it."""
        name = requested.removesuffix(":latest")
        if not name or "\0" in name:
            return None
        model = self._library.get(name)
        if model is None or not model.ok:
            return None
        return next((e for e in self.entries() if e.path == model.path), None)


def model_matches(info: ModelInfo, requested: str) -> bool:
    """Accept the id, the file name, the path, and Ollama-style ``id:latest``."""
    name = requested.removesuffix(":latest")
    return name in (info.id, info.path.name, str(info.path))


def path_matches(path: Path, requested: str) -> bool:
    """The same names as :func:`model_matches`, for a model known only by its file."""
    name = requested.removesuffix(":latest")
    return name in (path.stem, path.name, str(path))


def not_found_message(
    requested: str, catalog: ModelCatalog | None, loaded: ModelInfo | None
) -> str:
    """Why ``requested`` can't be served, with the names that can (the loaded model first)."""
    available = [e.id for e in catalog.entries()] if catalog is not None else []
    if loaded is not None and loaded.id not in available:
        available.insert(0, loaded.id)
    names = ", ".join(f"'{n}'" for n in available[:10]) or "none"
    return (
        f"The model '{requested}' is not loaded and not in the library. "
        f"Available: {names}. See GET /v1/models."
    )
