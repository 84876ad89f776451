"""The one owner of the models' lifecycle: load, unload, just in time, eviction, TTL and
``keep_alive``, for every model loaded in this worker at once.

Every change goes through :class:`ModelManager`: the start-up load, ``POST
/hearth/v1/load``, a request that names a library model not loaded yet (as in LM Studio
and Ollama), an eviction, an idle unload, ``keep_alive``. One ``asyncio.Lock``
serializes the changes, so two loads never overlap; requests to models already loaded
never wait for it. The loaded models themselves, and the choice of which idle one makes
room, are the :class:`~hearth.server.residency.Residency`'s; which settings a name
loads with, :class:`~hearth.server.load_targets.LoadTargets`'s; a load that only busy
models stand in the way of waits in the bounded :class:`LoadQueue`. One state machine
(:mod:`hearth.server.model_state`) says what the last change did; changes are pushed to
waiters, never polled.

A failed load leaves the other models as they were and never changes the settings the
next load of that model starts from: those of its last load that worked. Requests still
running on a model that is replaced or unloaded end with an error that says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from hearth.core.errors import (
    HearthError,
    ModelNotFoundError,
    ModelNotLoadedError,
    ModelsBusyError,
)
from hearth.core.model_info import LoadConfig, ModelInfo
from hearth.core.residency import (
    DEFAULT_JIT_TTL_S,
    DEFAULT_LOAD_QUEUE_SIZE,
    DEFAULT_LOAD_QUEUE_TIMEOUT_S,
    DEFAULT_MAX_MODELS,
    LoadedModel,
    ResidencyLimits,
)
from hearth.engine.engine import Engine, model_id_for
from hearth.server.catalog import CatalogEntry, ModelCatalog, model_matches
from hearth.server.idle_unload import run_timer
from hearth.server.load_queue import LoadQueue
from hearth.server.load_targets import LoadTargets
from hearth.server.model_loader import ModelLoader
from hearth.server.model_state import ModelState
from hearth.server.residency import Residency, Resident, using

log = logging.getLogger(__name__)

DEFAULT_LIMITS = ResidencyLimits(DEFAULT_MAX_MODELS, 1 << 62)
"""Three models, memory unbounded: in-process use; the server passes its own limits."""


class ModelManager:
    def __init__(
        self,
        new_engine: Callable[[], Engine],
        *,
        catalog: ModelCatalog | None,
        base_config: LoadConfig,
        ttl_s: float | None = None,
        jit_ttl_s: float | None = DEFAULT_JIT_TTL_S,
        jit: bool = True,
        initial: bool = False,
        on_initial_failure: Callable[[HearthError], None] | None = None,
        limits: ResidencyLimits = DEFAULT_LIMITS,
        queue_timeout_s: float = DEFAULT_LOAD_QUEUE_TIMEOUT_S,
        queue_size: int = DEFAULT_LOAD_QUEUE_SIZE,
    ) -> None:
        self.catalog = catalog
        self.residency = Residency(limits)
        self._initial = base_config if initial else None
        self._queue = LoadQueue(max_waiting=queue_size, timeout_s=queue_timeout_s)
        self._loader = ModelLoader(
            new_engine, self.residency, ttl_s=ttl_s, jit_ttl_s=jit_ttl_s,
            on_initial_failure=on_initial_failure,
        )  # fmt: skip
        self._targets = LoadTargets(catalog, self._loader, self.residency, base=base_config,
                                    initial=self._initial, jit=jit)  # fmt: skip
        self._lock = asyncio.Lock()
        self._requests: dict[str, contextlib.ExitStack] = {}
        self._background: set[asyncio.Task[object]] = set()
        # A load announced but not begun: whoever takes the lock first (the background
        # task, or a request that arrived before it) performs it.
        self._pending: LoadConfig | None = None
        self._replace = False  # the announced load unloads the other models first
        if self._initial is not None:  # /health says "loading" from the first request on
            self._pending = self._initial
            self._loader.announce(self._initial)

    # ------------------------------------------------------------------ state
    @property
    def state(self) -> ModelState:
        return self._loader.broadcast.state

    def load_in_flight(self) -> LoadConfig | None:
        """The load running or announced now, if any. An unload alone is none: a load
        that arrives during one waits for it (as Ollama queues it), never refused."""
        return self._loader.loading or self._pending

    def subscribe(self) -> contextlib.AbstractContextManager[asyncio.Queue[ModelState]]:
        """Every later state change, starting with the current state."""
        return self._loader.broadcast.subscribe()

    def loaded(self) -> list[LoadedModel]:
        """Every loaded model, least recently used first."""
        return self.residency.describe()

    def residents(self) -> list[Resident]:
        """Every loaded model, least recently used first."""
        return list(self.residency)

    @property
    def waiting_loads(self) -> int:
        """Loads waiting for memory held by busy models."""
        return self._queue.waiting

    def _changed(self) -> None:
        """A model was loaded, unloaded or finished a request: timers and waits look."""
        self._loader.wake.set()
        self._queue.changed.set()

    # ------------------------------------------------------------------ running
    async def run(self) -> None:
        """The manager's own work for the server's lifetime: the start-up load, then
        unloading each model once it has been idle for its session time."""
        if self._initial is not None:
            await self._load_pending(self._initial)
        await run_timer(
            self._loader.wake,
            lambda: min((e for r in self.residency if (e := r.clock.expiry(True)) is not None),
                        default=None),
            changing=self._lock.locked,
            unload_due=self._unload_due,
        )  # fmt: skip

    # ------------------------------------------------------------------ requests
    @contextlib.contextmanager
    def request(self, request_id: str) -> Iterator[None]:
        """Wrap a route's handler: the model it resolves is counted as in use (never
        evicted nor expired under it) until the handler returns."""
        stack = self._requests[request_id] = contextlib.ExitStack()
        try:
            yield
        finally:
            self._requests.pop(request_id, None)
            stack.close()
            self._changed()

    async def use(
        self,
        requested: str | None,
        *,
        keep_alive: float | None = None,
        request_id: str | None = None,
        generate: bool = False,
    ) -> Resident:
        """The loaded model to serve ``requested`` with, loading it first when needed.

        ``keep_alive`` (Ollama's, in seconds) is how long this model stays loaded after
        this request: 0 unloads it once idle, a negative value keeps it. It applies to
        this request only; a request without it restores the model's own TTL.
        ``request_id``: the request (see :meth:`request`) it is used by; ``generate``:
        it will queue a generation, which the model's scheduler is told is coming.
        """
        resident = self.residency.find(requested)
        if resident is None:
            model_id = model_id_for(Path(requested)) if requested else "the model"
            resident = await self._queue.run(
                lambda: self._load_for(requested), model_id=model_id,
                blocked_by=lambda: [r.info.id for r in self.residency.blockers()],
            )  # fmt: skip
        # No await since it was found or loaded: nothing could evict it in between.
        stack = self._requests.get(request_id) if request_id else None
        if stack is not None:
            stack.enter_context(using(resident, request_id if generate else None))
        resident.clock.keep_alive(keep_alive)
        return resident

    async def resolve(
        self, requested: str | None, *, keep_alive: float | None = None,
        request_id: str | None = None,
    ) -> ModelInfo:  # fmt: skip
        return (await self.use(requested, keep_alive=keep_alive, request_id=request_id)).info

    async def _load_for(self, requested: str | None) -> Resident | None:
        """One attempt at a just-in-time load (None: busy models hold its memory)."""
        seen = self._loader.finished
        try:
            async with self._lock:
                found = self.residency.find(requested)
                if found is not None:
                    return found
                config = self._targets.for_request(requested, self._pending)
                failure = self._loader.failure(config, since=seen)
                if failure is not None:
                    raise failure  # it failed while this request waited: don't retry
                pinned = config is self._pending
                return await self._perform(config, pinned=pinned, replace=False)
        finally:
            self._changed()  # the idle timer skips its turn while the lock is held

    def lookup(self, requested: str) -> Resident | CatalogEntry:
        """Describe a model without loading it."""
        return self._targets.lookup(requested)

    def available(self) -> list[CatalogEntry]:
        """Library models other than the loaded ones (which ModelInfo describes)."""
        return self._targets.available()

    # ------------------------------------------------------------------ admin
    def config_for(self, requested: str, **changes: object) -> LoadConfig:
        """The load an admin asked for, by name (``LoadTargets.for_admin``)."""
        return self._targets.for_admin(requested, **changes)

    async def refuse_if_pinned(self, config: LoadConfig) -> None:
        """A user's load alongside that models the user loaded keep out is refused at
        once (PinnedModelsError), before it is announced: the admin load answers it
        rather than a later error state. The load itself checks again."""
        await self._loader.refuse_if_pinned(config)

    def start_load(self, config: LoadConfig, *, replace: bool = False) -> ModelState:
        """Begin a user's load in the background and say so at once (``POST
        /hearth/v1/load``); its progress and outcome reach subscribers. ``replace``
        unloads the other models first; otherwise it loads alongside them."""
        self._pending, self._replace = config, replace
        self._loader.announce(config)
        task: asyncio.Task[object] = asyncio.create_task(self._load_pending(config))
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return self.state

    async def _load_pending(self, config: LoadConfig) -> None:
        """Perform an announced load, unless a request already did (or tried) it."""
        with contextlib.suppress(HearthError):  # logged, and published as the state
            await self._load_user(config, replace=self._replace, announced=True)

    async def load(self, config: LoadConfig, *, replace: bool = False) -> ModelInfo:
        """Load ``config`` as a user's (pinned) model, after any change already running:
        alongside the others, or with ``replace`` instead of them."""
        resident = await self._load_user(config, replace=replace, announced=False)
        if resident is None:
            raise ModelNotLoadedError(self._targets.not_loaded_message())
        return resident.info

    async def _load_user(
        self, config: LoadConfig, *, replace: bool, announced: bool
    ) -> Resident | None:
        """None: an announced load that a later load, a request or a cancel took over."""

        async def attempt() -> Resident | _Skipped | None:
            async with self._lock:
                if announced and self._pending is not config:
                    return _SKIPPED
                return await self._perform(config, pinned=True, replace=replace)

        try:
            outcome = await self._queue.run(
                attempt, model_id=model_id_for(Path(config.model_path)),
                blocked_by=lambda: [r.info.id for r in self.residency.blockers()],
            )  # fmt: skip
        except ModelsBusyError as exc:  # it waited past the queue's bound, never begun
            if announced and self._pending is config:  # its outcome, not "loading" forever
                self._pending = None
                self._loader.refused(config, exc)
            raise
        finally:
            self._changed()
        return outcome if isinstance(outcome, Resident) else None

    async def _perform(self, config: LoadConfig, *, pinned: bool, replace: bool) -> Resident | None:
        """Load under the lock (None: busy models hold the memory it needs, and an
        announced load stays announced, to be tried again)."""
        if replace:
            for other in list(self.residency):
                if Path(other.config.model_path) != Path(config.model_path):
                    await self._loader.unload(other, "The model was unloaded to load another one.")
        try:
            initial = config is self._initial
            resident = await self._loader.load(config, pinned=pinned, initial=initial)
        except BaseException:
            if self._pending is config:
                self._pending = None
            raise
        if resident is not None and self._pending is config:
            self._pending = None
        return resident

    def cancel_load(self) -> bool:
        """Cancel the running load, or the one announced and waiting its turn; True if
        there was one."""
        pending, self._pending = self._pending, None
        running = self._loader.cancel()
        if pending is not None and not self._lock.locked():
            self._publish_settled()  # its task will find nothing to do
        return running or pending is not None

    def _publish_settled(self) -> None:
        """After a change: the announced load next if one waits, else the most recently
        used model (or nothing): never "idle" for a moment between an unload and a load."""
        self._loader.settle(self._pending, self.residency.find(None))

    async def unload(self, model: str | None = None, reason: str | None = None) -> None:
        """Unload ``model`` (every model without one); the others stay."""
        async with self._lock:
            targets = list(self.residency) if model is None else [
                r for r in self.residency if model_matches(r.info, model)]  # fmt: skip
            if model is not None and not targets:
                raise ModelNotFoundError(f"'{model}' is not loaded.")
            for resident in targets:
                await self._loader.unload(resident, reason or "The model was unloaded.")
            self._publish_settled()
        self._changed()

    def expires_in(self) -> float | None:
        """Seconds until the most recently used model is unloaded for idleness if
        nothing uses it; None while it is kept (or nothing is loaded)."""
        resident = self.residency.find(None)
        return resident.clock.expires_in(True) if resident is not None else None

    async def _unload_due(self) -> bool:
        """Unload each model whose idle time is up; False while a stream still runs on
        one (look again shortly)."""
        all_idle = True
        async with self._lock:
            now = time.monotonic()
            for resident in list(self.residency):
                deadline = resident.clock.expiry(True)
                if deadline is None or now < deadline:
                    continue
                if resident.busy:
                    all_idle = False
                    continue
                log.info("unloading %s after %.1f s idle", resident.info.id,
                         resident.clock.session_s or 0.0)  # fmt: skip
                await self._loader.unload(resident, "The model was unloaded after being idle.")
            self._publish_settled()
        self._changed()
        return all_idle

    async def close(self) -> None:
        """Stop background loads (server shutdown)."""
        self._loader.cancel()
        for task in list(self._background):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def shutdown(self, reason: str) -> None:
        """Unload every model, blocking (the server's last step: prompt caches saved)."""
        for resident in list(self.residency):
            self.residency.remove(resident)
            resident.engine.unload(reason)


class _Skipped:
    """An announced load that another load or a cancel replaced before it began."""


_SKIPPED = _Skipped()
