"""One model in or out: the load (its estimate, the evictions that make room, a fresh
engine, the measurement after), the unload, and the lifecycle state they publish.

The model manager calls these under its lifecycle lock and decides which model and
when; this module does the work and keeps what each load leaves behind: the settings
of each model's last good load, the failures a waiting request must not retry, the
counters clients tell reloads apart by.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from pathlib import Path

from hearth.core.errors import HearthError, LoadCancelledError
from hearth.core.model_info import LoadConfig, ModelInfo
from hearth.core.residency import PinnedModelsError
from hearth.core.units import format_bytes
from hearth.engine.engine import Engine, model_id_for
from hearth.server.catalog import path_matches
from hearth.server.idle_unload import IdleClock
from hearth.server.model_memory import MemorySample, estimate_load_bytes, record_estimate_error
from hearth.server.model_state import LifecycleState, ModelState, StateBroadcast
from hearth.server.residency import Residency, Resident

log = logging.getLogger(__name__)

_PROGRESS_STEP = 0.01


class ModelLoader:
    def __init__(
        self,
        new_engine: Callable[[], Engine],
        residency: Residency,
        *,
        ttl_s: float | None,
        jit_ttl_s: float | None,
        on_initial_failure: Callable[[HearthError], None] | None = None,
    ) -> None:
        self._new_engine = new_engine
        self._residency = residency
        self._ttl_s = ttl_s  # a user's model: kept unless the server has a TTL
        self._jit_ttl_s = ttl_s if ttl_s is not None else jit_ttl_s
        self._on_initial_failure = on_initial_failure
        self.broadcast = StateBroadcast()
        self.wake = asyncio.Event()  # shared by every model's idle clock
        self.loading: LoadConfig | None = None  # the load running now
        self.finished = 0  # loads that ended, well or not
        self.last_good: LoadConfig | None = None
        self._good: dict[Path, LoadConfig] = {}  # each model's last load that worked
        self._failures: dict[Path, tuple[int, HearthError]] = {}
        self._attempts = 0
        self._loads = 0
        self._cancel = threading.Event()

    # ------------------------------------------------------------------ what is known
    def known(self, requested: str) -> LoadConfig | None:
        """The last good settings of a model loaded before, by any of its names."""
        return next((c for p, c in self._good.items() if path_matches(p, requested)), None)

    def failure(self, config: LoadConfig, *, since: int) -> HearthError | None:
        """The error of a load of this file that failed after ``since`` loads ended."""
        failed = self._failures.get(Path(config.model_path))
        return failed[1] if failed is not None and failed[0] > since else None

    # ------------------------------------------------------------------ state
    def publish(
        self,
        state: LifecycleState,
        *,
        model_id: str | None = None,
        progress: float = 0.0,
        error: str | None = None,
    ) -> None:
        self.broadcast.publish(ModelState(state, progress, model_id, error, self._loads))
        self.wake.set()

    def announce(self, config: LoadConfig) -> None:
        self.publish(LifecycleState.LOADING, model_id=model_id_for(Path(config.model_path)))

    def settle(self, pending: LoadConfig | None, latest: Resident | None) -> None:
        """After a change: the announced load next if one waits, else the most recently
        used model, else nothing (an error stays until the next load)."""
        if pending is not None:
            self.announce(pending)
        elif latest is not None:
            self.publish(LifecycleState.READY, model_id=latest.info.id, progress=1.0)
        elif self.broadcast.state.state is not LifecycleState.ERROR:
            self.publish(LifecycleState.EMPTY)

    def refused(self, config: LoadConfig, error: HearthError) -> None:
        """A user's announced load that never began (busy models held its memory past
        the queue's bound): its outcome is this error, as a failed load's would be."""
        model_id = model_id_for(Path(config.model_path))
        self.publish(LifecycleState.ERROR, model_id=model_id, error=error.message)

    def cancel(self) -> bool:
        """Cancel the running load; True if there was one."""
        self._cancel.set()
        return self.loading is not None

    # ------------------------------------------------------------------ load
    async def load(self, config: LoadConfig, *, pinned: bool, initial: bool) -> Resident | None:
        """Load ``config`` beside the others, evicting idle just-in-time ones if it
        must; None when busy models hold what it needs (nothing was changed: wait and
        try again). PinnedModelsError when models the user loaded do: they stay."""
        model_id = model_id_for(Path(config.model_path))
        existing = self._residency.find(model_id)
        if existing is not None and existing.config == config:
            if pinned and not existing.pinned:  # the user's now: it stays
                existing.pinned = True
                existing.clock.retime(self._ttl_s)
            self.publish(LifecycleState.READY, model_id=model_id, progress=1.0)
            return existing
        need = await asyncio.to_thread(estimate_load_bytes, config)
        victims = self._residency.victims(need, keep=existing)
        if victims is None:
            pinned_in_way = self._residency.held_by_pinned(need, keep=existing)
            if not pinned_in_way:
                return None  # busy models hold it: the caller waits
            refusal = self._refusal(model_id, need, pinned_in_way)
            if pinned:  # the user's load, announced: the app reads its outcome here
                self.publish(LifecycleState.ERROR, model_id=model_id, error=refusal.message)
            raise refusal
        if existing is not None:  # an explicit load with other settings
            await self.unload(existing, "The model was unloaded to load it with other settings.")
        for victim in victims:
            log.info("evicting %s (idle, least recently used) to make room for %s",
                     victim.info.id, model_id)  # fmt: skip
            await self.unload(victim, f"The model was unloaded to make room for '{model_id}'.")
        self.loading = config
        try:
            return await self._attempt(config, need, pinned=pinned, initial=initial)
        finally:
            self.loading = None
            self.finished += 1

    async def refuse_if_pinned(self, config: LoadConfig) -> None:
        """Raise now the PinnedModelsError that loading ``config`` alongside the others
        would meet, if pinned models keep it out (changes nothing)."""
        model_id = model_id_for(Path(config.model_path))
        existing = self._residency.find(model_id)
        if existing is not None and existing.config == config:
            return
        need = await asyncio.to_thread(estimate_load_bytes, config)
        pinned = self._residency.held_by_pinned(need, keep=existing)
        if pinned:
            raise self._refusal(model_id, need, pinned)

    def _refusal(self, model_id: str, need: int, pinned: list[Resident]) -> PinnedModelsError:
        """Why ``model_id`` can't load beside the pinned models, and how to free room."""
        limits = self._residency.limits
        names = tuple(r.info.id for r in pinned)
        quoted = ", ".join(f"'{n}'" for n in names)
        if len(pinned) + 1 > limits.max_models:
            why = f"--max-models allows {limits.max_models} loaded at once"
        else:
            used = sum(r.memory_bytes for r in pinned)
            why = (
                f"it needs about {format_bytes(need)} and the memory budget "
                f"({format_bytes(limits.memory_budget_bytes)}) has "
                f"{format_bytes(max(0, limits.memory_budget_bytes - used))} left"
            )
        first = names[0]
        log.warning("load of %s refused: the pinned models %s hold what it needs (%s)",
                    model_id, ", ".join(names), why)  # fmt: skip
        return PinnedModelsError(
            f"'{model_id}' can't be loaded beside {quoted}, loaded by the user and kept "
            f"until ejected or their TTL: {why}. To free memory, eject one in the app, "
            f'unload it (POST /hearth/v1/unload {{"model": "{first}"}}), or load '
            f"'{model_id}' in their place (the app's Replace, or POST /hearth/v1/load with "
            '"replace": true).',
            names,
        )

    async def _attempt(
        self, config: LoadConfig, estimate: int, *, pinned: bool, initial: bool
    ) -> Resident:
        self._attempts += 1
        attempt = self._attempts
        model_id = model_id_for(Path(config.model_path))
        self._cancel = cancel = threading.Event()
        self.publish(LifecycleState.LOADING, model_id=model_id)
        loop = asyncio.get_running_loop()
        last_step = [0.0]
        engine = self._new_engine()

        def on_progress(fraction: float) -> None:  # on the load thread
            if fraction - last_step[0] >= _PROGRESS_STEP or fraction >= 1.0:
                last_step[0] = fraction
                loop.call_soon_threadsafe(self._on_progress, attempt, model_id, fraction)

        def run() -> tuple[ModelInfo, int]:
            before = MemorySample.now()
            info = engine.load(config, on_progress=on_progress, cancel=cancel)
            return info, MemorySample.now().growth_since(before)

        try:
            info, measured = await asyncio.to_thread(run)
        except LoadCancelledError:
            self.settle(None, self._residency.find(None))
            raise
        except HearthError as exc:
            log.error("Loading %s failed: %s", model_id, exc.message)
            self._failures[Path(config.model_path)] = (self.finished + 1, exc)
            self.publish(LifecycleState.ERROR, model_id=model_id, error=exc.message)
            if initial and self._on_initial_failure is not None:
                self._on_initial_failure(exc)
            raise
        except BaseException:
            self.publish(LifecycleState.ERROR, model_id=model_id, error="The load stopped.")
            raise
        record_estimate_error(model_id, estimate, measured)
        ttl = self._ttl_s if pinned else self._jit_ttl_s
        resident = Resident(engine, config, info, pinned, IdleClock(ttl, self.wake),
                            estimate_bytes=estimate, measured_bytes=measured)  # fmt: skip
        self._residency.add(resident)
        self._failures.pop(Path(config.model_path), None)
        self._good[Path(config.model_path)] = self.last_good = config
        self._loads += 1
        self.publish(LifecycleState.READY, model_id=info.id, progress=1.0)
        where = ", ".join(f"{d.name} ({d.description})" for d in info.devices) or "CPU"
        log.info(
            "Model %s ready (%d slots x %d tokens) on %s; %d of %d layers on GPU; %d of %d "
            "models loaded",
            info.id, info.n_slots, info.n_ctx_per_slot, where, info.gpu_layers, info.n_layer,
            len(self._residency), self._residency.limits.max_models,
        )  # fmt: skip
        return resident

    def _on_progress(self, attempt: int, model_id: str, fraction: float) -> None:
        state = self.broadcast.state
        if attempt == self._attempts and state.state is LifecycleState.LOADING:
            self.publish(LifecycleState.LOADING, model_id=model_id, progress=min(fraction, 1.0))

    # ------------------------------------------------------------------ unload
    async def unload(self, resident: Resident, reason: str) -> None:
        """Take ``resident`` out and free it (its slots saved to the prompt cache);
        requests still running on it end with ``reason``."""
        self._residency.remove(resident)
        self.publish(LifecycleState.UNLOADING, model_id=resident.info.id)
        try:
            await asyncio.to_thread(resident.engine.unload, reason)
        finally:
            self.wake.set()
