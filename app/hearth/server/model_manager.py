"""The one owner of the model's lifecycle: load, unload, switch, just in time, TTL and
``keep_alive``.

Every change of the loaded model goes through :class:`ModelManager`: the start-up load,
``POST /hearth/v1/load``, a request that names another library model (as in LM Studio
and Ollama), an idle unload, ``keep_alive``. One ``asyncio.Lock`` serializes them, so two
loads can never overlap, and one state machine (:mod:`hearth.server.model_state`) says
where it stands; changes are pushed to waiters, never polled.

A failed load leaves nothing loaded and never changes the configuration the next load
starts from: that is the last one that worked. Requests still running on a model that is
swapped out or unloaded end with an error that says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from hearth.core.errors import (
    HearthError,
    LoadCancelledError,
    ModelNotFoundError,
    ModelNotLoadedError,
)
from hearth.core.model_info import LoadConfig, ModelInfo
from hearth.engine.engine import Engine, model_id_for
from hearth.server.catalog import (
    CatalogEntry,
    LibraryCatalog,
    ModelCatalog,
    model_matches,
    path_matches,
)
from hearth.server.idle_unload import IdleClock
from hearth.server.model_state import LifecycleState, ModelState, StateBroadcast

__all__ = [
    "CatalogEntry",
    "LibraryCatalog",
    "ModelCatalog",
    "ModelManager",
    "model_matches",
]

log = logging.getLogger(__name__)

_PROGRESS_STEP = 0.01


class ModelManager:
    def __init__(
        self,
        engine: Engine,
        *,
        catalog: ModelCatalog | None,
        base_config: LoadConfig,
        ttl_s: float | None = None,
        jit: bool = True,
        initial: bool = False,
        on_initial_failure: Callable[[HearthError], None] | None = None,
    ) -> None:
        self.engine = engine
        self.catalog = catalog
        self._base = base_config
        self._jit = jit
        self._initial = base_config if initial else None
        self._on_initial_failure = on_initial_failure
        self._idle = IdleClock(ttl_s)  # when an idle model is unloaded (TTL, keep_alive)
        self._lock = asyncio.Lock()
        self._broadcast = StateBroadcast()
        self._cancel = threading.Event()
        self._last_good: LoadConfig | None = None
        self._attempts = 0
        self._finished = 0  # loads that ended, well or not
        self._loads = 0
        self._failures: dict[Path, tuple[int, HearthError]] = {}
        self._background: set[asyncio.Task[object]] = set()
        # A load announced but not begun: whoever takes the lock first (the background
        # task, or a request that arrived before it) performs it.
        self._pending: LoadConfig | None = None
        if self._initial is not None:  # /health says "loading" from the first request on
            self._pending = self._initial
            self._publish(LifecycleState.LOADING, model_id=model_id_for(base_config.model_path))

    # ------------------------------------------------------------------ state
    @property
    def state(self) -> ModelState:
        return self._broadcast.state

    @property
    def busy(self) -> bool:
        """A load, switch or unload is running (or waiting to run)."""
        return self._lock.locked()

    def subscribe(self) -> contextlib.AbstractContextManager[asyncio.Queue[ModelState]]:
        """Every later state change, starting with the current state."""
        return self._broadcast.subscribe()

    def _publish(
        self,
        state: LifecycleState,
        *,
        model_id: str | None = None,
        progress: float = 0.0,
        error: str | None = None,
    ) -> None:
        self._broadcast.publish(ModelState(state, progress, model_id, error, self._loads))
        self._idle.wake.set()

    # ------------------------------------------------------------------ running
    async def run(self) -> None:
        """The manager's own work for the server's lifetime: the start-up load, then
        unloading the model once it has been idle for its session time."""
        if self._initial is not None:
            await self._load_pending(self._initial)
        await self._idle.run(
            loaded=lambda: self.engine.info is not None,
            changing=self._lock.locked,
            unload_if_idle=self._unload_if_idle,
        )

    # ------------------------------------------------------------------ requests
    def touch(self) -> None:
        self._idle.touch()

    def in_use(self) -> contextlib.AbstractContextManager[None]:
        """Count a request that uses the model; an idle unload waits for none to remain."""
        return self._idle.in_use()

    async def resolve(self, requested: str | None, *, keep_alive: float | None = None) -> ModelInfo:
        """The model to serve ``requested`` with, loading it first when needed.

        ``keep_alive`` (Ollama's, in seconds) is how long the model stays loaded after
        this request: 0 unloads it once idle, a negative value keeps it. It applies to
        this request only; a request without it restores the server's own TTL.
        """
        self._idle.keep_alive(keep_alive)
        info = self.engine.info
        if info is not None and not self._lock.locked() and _serves(info, requested):
            return info
        seen = self._finished
        try:
            async with self._lock:
                info = self.engine.info
                if info is not None and _serves(info, requested):
                    return info
                config = self._target(requested)
                failure = self._failures.get(Path(config.model_path))
                if failure is not None and failure[0] > seen:
                    raise failure[1]  # it failed while this request waited: don't retry
                log.info("loading %s on demand", config.model_path)
                return await self._load_locked(config)
        finally:
            self._idle.wake.set()  # the idle timer skips its turn while the lock is held

    def _target(self, requested: str | None) -> LoadConfig:
        pending = self._pending
        if pending is not None and (not requested or path_matches(pending.model_path, requested)):
            return pending
        last = self._last_good
        if not requested or self._known_path(requested) is not None:
            if last is None:
                raise ModelNotLoadedError(self._not_loaded_message())
            # Unloaded after its time-to-live, after a failed switch, or switched away:
            # the file asked for, with the settings of the last load that worked.
            return dataclasses.replace(
                last, model_path=self._known_path(requested) or last.model_path
            )
        entry = self.catalog.find(requested) if self.catalog is not None and self._jit else None
        if entry is None:
            raise ModelNotFoundError(self._not_found_message(requested))
        return dataclasses.replace(last or self._base, model_path=entry.path)

    def _known_path(self, requested: str | None) -> Path | None:
        """The file of a model this server has loaded or was started with, by name."""
        for known in (self._last_good, self._initial):
            if requested and known is not None and path_matches(known.model_path, requested):
                return Path(known.model_path)
        return None

    def lookup(self, requested: str) -> ModelInfo | CatalogEntry:
        """Describe a model without loading it."""
        info = self.engine.info
        if info is not None and model_matches(info, requested):
            return info
        entry = self.catalog.find(requested) if self.catalog is not None else None
        if entry is None:
            raise ModelNotFoundError(self._not_found_message(requested))
        return entry

    def available(self) -> list[CatalogEntry]:
        """Library models other than the loaded one (which ModelInfo describes)."""
        entries = self.catalog.entries() if self.catalog is not None else []
        info = self.engine.info
        return [e for e in entries if info is None or e.path != info.path]

    # ------------------------------------------------------------------ admin
    def config_for(self, requested: str, **changes: object) -> LoadConfig:
        """The load an admin asked for: a library model (or the one this server was
        started with) by name, with the given settings over the last good ones.

        Paths outside the library are refused with the same message whether or not
        the file exists, so the route is no oracle for the worker's disk.
        """
        path = self._known_path(requested)
        if path is None:
            entry = self.catalog.find(requested) if self.catalog is not None else None
            if entry is None:
                raise ModelNotFoundError(
                    f"'{requested}' is not a model in the library. Add the file to the "
                    "library first (hearth import PATH, or the app's Library page), then "
                    "load it by name; GET /v1/models lists the names."
                )
            path = entry.path
        base = self._last_good or self._initial or self._base
        return dataclasses.replace(base, model_path=path, **changes)  # type: ignore[arg-type]

    def start_load(self, config: LoadConfig) -> ModelState:
        """Begin a load in the background and say so at once (``POST /hearth/v1/load``);
        its progress and outcome reach subscribers."""
        self._pending = config
        self._publish(LifecycleState.LOADING, model_id=model_id_for(config.model_path))
        task: asyncio.Task[object] = asyncio.create_task(self._load_pending(config))
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return self.state

    async def _load_pending(self, config: LoadConfig) -> None:
        """Perform an announced load, unless a request already did (or tried) it."""
        async with self._lock:
            if self._pending is not config:
                return
            with contextlib.suppress(HearthError):  # logged, and published as the state
                await self._load_locked(config)

    async def load(self, config: LoadConfig) -> ModelInfo:
        """Load ``config`` (after any lifecycle change already running), replacing the
        loaded model."""
        async with self._lock:
            return await self._load_locked(config)

    def cancel_load(self) -> bool:
        """Cancel the running load; True if there was one."""
        loading = self.state.state is LifecycleState.LOADING
        self._cancel.set()
        return loading

    async def unload(self, reason: str = "The model was unloaded.") -> None:
        async with self._lock:
            await self._unload_locked(reason)

    # ------------------------------------------------------------------ internals
    async def _load_locked(self, config: LoadConfig) -> ModelInfo:
        try:
            return await self._attempt_load(config)
        finally:
            self._finished += 1

    async def _attempt_load(self, config: LoadConfig) -> ModelInfo:
        if self._pending is config:
            self._pending = None
        self._attempts += 1
        attempt = self._attempts
        model_id = model_id_for(Path(config.model_path))
        self._cancel = cancel = threading.Event()
        self._publish(LifecycleState.LOADING, model_id=model_id)
        loop = asyncio.get_running_loop()
        last_step = [0.0]

        def on_progress(fraction: float) -> None:  # on the load thread
            if fraction - last_step[0] >= _PROGRESS_STEP or fraction >= 1.0:
                last_step[0] = fraction
                loop.call_soon_threadsafe(self._on_progress, attempt, model_id, fraction)

        try:
            info = await asyncio.to_thread(
                self.engine.load, config, on_progress=on_progress, cancel=cancel
            )
        except LoadCancelledError:
            self._publish(LifecycleState.EMPTY)
            raise
        except HearthError as exc:
            log.error("Loading %s failed: %s", model_id, exc.message)
            self._failures[Path(config.model_path)] = (self._finished + 1, exc)
            self._publish(LifecycleState.ERROR, model_id=model_id, error=exc.message)
            if config is self._initial and self._on_initial_failure is not None:
                self._on_initial_failure(exc)
            raise
        except BaseException:
            self._publish(LifecycleState.ERROR, model_id=model_id, error="The load stopped.")
            raise
        self._failures.pop(Path(config.model_path), None)
        self._last_good = config
        self._loads += 1
        self._publish(LifecycleState.READY, model_id=info.id, progress=1.0)
        where = ", ".join(f"{d.name} ({d.description})" for d in info.devices) or "CPU"
        log.info(
            "Model %s ready (%d slots x %d tokens) on %s; %d of %d layers on GPU",
            info.id, info.n_slots, info.n_ctx_per_slot, where, info.gpu_layers, info.n_layer,
        )  # fmt: skip
        self.touch()
        return info

    def _on_progress(self, attempt: int, model_id: str, fraction: float) -> None:
        state = self.state
        if attempt == self._attempts and state.state is LifecycleState.LOADING:
            self._publish(LifecycleState.LOADING, model_id=model_id, progress=min(fraction, 1.0))

    async def _unload_locked(self, reason: str) -> None:
        info = self.engine.info
        if info is None:
            if self.state.state is not LifecycleState.ERROR:
                self._publish(LifecycleState.EMPTY)
            return
        self._publish(LifecycleState.UNLOADING, model_id=info.id)
        try:
            await asyncio.to_thread(self.engine.unload, reason)
        finally:
            self._publish(LifecycleState.EMPTY)

    def expires_in(self) -> float | None:
        """Seconds until the loaded model is unloaded for idleness if nothing uses it;
        None while it is kept (no TTL, ``keep_alive`` < 0, or nothing loaded)."""
        return self._idle.expires_in(self.engine.info is not None)

    async def _unload_if_idle(self) -> bool:
        """Unload if nothing uses the model; False while a stream still runs on it."""
        async with self._lock:
            deadline = self._idle.expiry(self.engine.info is not None)
            if deadline is None or time.monotonic() < deadline:
                return True
            status = self.engine.status()
            if status is not None and (any(s.busy for s in status.slots) or status.queue_depth):
                return False
            log.info("unloading the model after %.1f s idle", self._idle.session_s or 0.0)
            await self._unload_locked("The model was unloaded after being idle.")
            return True

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

    def _not_loaded_message(self) -> str:
        state = self.state
        if state.state is LifecycleState.ERROR:
            return f"The model failed to load: {state.error}"
        return "No model is loaded. Name a model from GET /v1/models, or load one first."

    async def close(self) -> None:
        """Stop background loads (server shutdown)."""
        self._cancel.set()
        for task in list(self._background):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def _serves(info: ModelInfo, requested: str | None) -> bool:
    return not requested or model_matches(info, requested)


async def state_changes(manager: ModelManager, follow: bool) -> AsyncIterator[ModelState]:
    """Each lifecycle state from now on; without ``follow``, until one settles."""
    with manager.subscribe() as queue:
        while True:
            state = await queue.get()
            yield state
            if not follow and state.settled:
                return
