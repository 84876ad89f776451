"""What a model's name loads: the settings a request or an admin load of it starts from.

A name may mean the load announced now, a model loaded before (its last good settings,
kept by the loader), the model the server was started with, or a library model (the
settings base: the last good load's, else the start-up's, else the server's). Paths
outside the library are never loaded by name. The model manager asks here, under its
lock, and decides when; nothing here changes what is loaded.
"""

from __future__ import annotations

import dataclasses
import logging

from hearth.core.errors import ModelNotFoundError, ModelNotLoadedError
from hearth.core.model_info import LoadConfig, ModelInfo
from hearth.server.catalog import CatalogEntry, ModelCatalog, not_found_message, path_matches
from hearth.server.model_loader import ModelLoader
from hearth.server.model_state import LifecycleState
from hearth.server.residency import Residency, Resident

log = logging.getLogger(__name__)


class LoadTargets:
    def __init__(
        self,
        catalog: ModelCatalog | None,
        loader: ModelLoader,
        residency: Residency,
        *,
        base: LoadConfig,
        initial: LoadConfig | None,
        jit: bool,
    ) -> None:
        self.catalog = catalog
        self._loader = loader
        self._residency = residency
        self._base = base
        self._initial = initial
        self._jit = jit

    def for_request(self, requested: str | None, pending: LoadConfig | None) -> LoadConfig:
        """The load a request naming ``requested`` (None: any model) needs: the
        announced one if it matches, a model loaded before, or a library model just in
        time (when allowed)."""
        if pending is not None and (not requested or path_matches(pending.model_path, requested)):
            return pending
        known = self._loader.known(requested) if requested else self._loader.last_good
        if known is not None:  # loaded before (then unloaded): with its own settings
            return known
        if not requested:
            raise ModelNotLoadedError(self.not_loaded_message())
        entry = self.catalog.find(requested) if self.catalog is not None and self._jit else None
        if entry is None:
            raise ModelNotFoundError(not_found_message(requested, self.catalog, self._latest()))
        return self._library_load(entry)

    def for_admin(self, requested: str, **changes: object) -> LoadConfig:
        """The load an admin asked for: a library model (or one this server was started
        with) by name, with the given settings over that model's last good ones.

        Paths outside the library are refused with the same message whether or not
        the file exists, so the route is no oracle for the worker's disk.
        """
        known = self._loader.known(requested)
        initial = self._initial
        if known is None and initial is not None and path_matches(initial.model_path, requested):
            known = initial
        if known is None:
            entry = self.catalog.find(requested) if self.catalog is not None else None
            if entry is None:
                raise ModelNotFoundError(
                    f"'{requested}' is not a model in the library. Add the file to the "
                    "library first (hearth import PATH, or the app's Library page), then "
                    "load it by name; GET /v1/models lists the names."
                )
            known = self._library_load(entry)
        return dataclasses.replace(known, **changes)  # type: ignore[arg-type]

    def _library_load(self, entry: CatalogEntry) -> LoadConfig:
        base = self._loader.last_good or self._initial or self._base
        return dataclasses.replace(base, model_path=entry.path, mmproj_path=entry.projector)

    def _latest(self) -> ModelInfo | None:
        resident = self._residency.find(None)
        return resident.info if resident is not None else None

    def lookup(self, requested: str) -> Resident | CatalogEntry:
        """Describe a model without loading it."""
        resident = self._residency.find(requested)
        if resident is not None:
            return resident
        entry = self.catalog.find(requested) if self.catalog is not None else None
        if entry is None:
            raise ModelNotFoundError(not_found_message(requested, self.catalog, self._latest()))
        return entry

    def available(self) -> list[CatalogEntry]:
        """Library models other than the loaded ones (which ModelInfo describes)."""
        entries = self.catalog.entries() if self.catalog is not None else []
        loaded = {r.info.path for r in self._residency}
        return [e for e in entries if e.path not in loaded]

    def not_loaded_message(self) -> str:
        """Why a request that names no model finds none."""
        state = self._loader.broadcast.state
        if state.state is LifecycleState.ERROR:
            return f"The model failed to load: {state.error}"
        return "No model is loaded. Name a model from GET /v1/models, or load one first."
