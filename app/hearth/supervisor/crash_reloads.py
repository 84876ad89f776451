"""The supervisor's memory of what its worker holds, and the reloads after a crash.

``CrashReloads`` is the one owner of three facts: the record of the resident models
(``recovery.ResidentRecord``), the reloads under way or last done (``Recovery``) and the
model a reload is bringing back at this moment. The ``Supervisor`` tells it what
happens to the worker (a start, a load beside, an eject, a status read, an unexpected
exit, the user's stop) and, for ``Supervisor.restart``, hands it the two things the
reloads need: a way to start a fresh worker with a model (``Launch``) and the live
worker to load the rest into (``LiveWorker``). How the reloads go is said through
``on_change``, which the supervisor turns into a status; the status itself (its state,
its generation, the process) stays the supervisor's.

Kept apart from ``supervisor.py`` so that the worker's lifecycle (launch, wait, exit,
endpoint, stop) reads on its own, and the restart loop with its order of use, its
refusals and its failures reads on its own.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol

from hearth.config.launch import NO_MODEL
from hearth.core.errors import ModelLoadError
from hearth.supervisor.client import WorkerClient, WorkerError
from hearth.supervisor.launch_options import LoadOptions
from hearth.supervisor.recovery import (
    CRASHED_LOADING,
    Recovery,
    ResidentRecord,
    Returning,
    fit_refusal,
    in_library,
    outside_library_first,
    restore_order,
)
from hearth.supervisor.residency_loads import load_beside
from hearth.supervisor.residency_status import ResidencyStatus
from hearth.supervisor.worker_status import SupervisorError

log = logging.getLogger(__name__)

Launch = Callable[[Path, LoadOptions], Awaitable[str]]
"""Start a fresh worker with a model and wait until it serves; returns its id. It
reports back through ``CrashReloads.worker_started`` before it returns."""


class LiveWorker(Protocol):
    """The running worker as the reloads see it (the ``Supervisor`` is one)."""

    @property
    def ready(self) -> bool: ...
    @property
    def client(self) -> WorkerClient | None: ...
    def live_client(self) -> WorkerClient: ...  # WorkerUnavailableError without one
    async def residency(self) -> ResidencyStatus: ...


class CrashReloads:
    """What the worker holds, kept while it lives, and bringing it back after a crash."""

    def __init__(self, on_change: Callable[[Recovery | None], None]) -> None:
        self._on_change = on_change  # a new state of the reloads, to say in the status
        self._record = ResidentRecord()  # what the worker holds, to bring back after a crash
        self._recovery: Recovery | None = None  # the reloads after the last crash
        self._reloading: str | None = None  # the model a reload is bringing back now

    @property
    def recovery(self) -> Recovery | None:
        """The reloads after the last crash, said until the user acts (None: none)."""
        return self._recovery

    # ------------------------------------------------------------------ the worker's events
    def user_took_over(self) -> None:
        """The user's own start: the last crash's reloads are over."""
        self._recovery = None

    def worker_started(self, path: Path, options: LoadOptions, model_id: str) -> None:
        """A fresh worker serves ``model_id`` from ``path`` (a reload's or the user's)."""
        if self._reloading is not None and self._recovery is not None:  # after a crash:
            self._recovery = self._recovery.came_back(self._reloading)  # said with READY
            self._record.restarted_with(path)
        elif path == NO_MODEL:
            self._record.unloaded(None)
        else:
            self._record.started(path, options, model_id)

    def worker_exited(self) -> None:
        """The worker died on its own; if a reload was under way, that model crashed it
        again and is not tried once more. (The crash's own status says the rest.)"""
        if self._reloading is None:
            return
        self._record.forget(self._reloading)
        if self._recovery is not None:
            self._recovery = self._recovery.failed_with(self._reloading, CRASHED_LOADING)

    def observed(self, status: ResidencyStatus) -> None:
        """The current worker's own account of its models; while the reloads run the
        record holds the models still to come back, so it is kept as it is."""
        if self._recovery is None or self._recovery.done:
            self._record.observe(status)

    def loaded(self, path: Path, options: LoadOptions, model_id: str, memory: int, *,
               alone: bool) -> None:  # fmt: skip
        """The user loaded ``path`` beside the others (``alone``: instead of them)."""
        self._record.loaded(path, options, model_id, memory, alone=alone)

    def unloaded(self, model_id: str) -> None:
        """The user ejected ``model_id``: it won't come back after a crash."""
        self._record.unloaded(model_id)

    def settle(self) -> None:
        """The user acts on the models (a load, an eject): reloads that are over are no
        longer said."""
        if self._recovery is not None and self._recovery.done:
            self._recovery = None
            self._on_change(None)

    def stopped(self) -> None:
        """The user's Eject of the whole worker: nothing comes back after it."""
        self._recovery = None
        self._record.unloaded(None)

    # ------------------------------------------------------------------ the reloads
    async def reload(self, launch: Launch, worker: LiveWorker) -> str | None:
        """Bring back every model the worker held, most recently used first; returns
        the first one's id, or None with nothing recorded (the caller then relaunches as
        it last did). See ``Supervisor.restart``."""
        plan, left_out = self._record.plan()
        recent_first = [item.model_id for item in plan]  # the order of use to restore
        if len(plan) > 1 and any(item.started for item in plan[1:]):
            # (reads the library's folders: off the loop's thread)
            plan = await asyncio.to_thread(outside_library_first, plan, in_library)
        if not plan:
            return None
        earlier = self._recovery  # its failures are said until the user acts
        recovery = Recovery(
            pending=tuple(item.model_id for item in plan),
            failed=earlier.failed if earlier is not None else (),
        )
        for item, why in left_out:
            self._record.forget(item.model_id)
            recovery = recovery.failed_with(item.model_id, why)
        self._recovery = recovery
        log.info("restarting after a crash: reloading %s", ", ".join(recovery.pending))
        first: str | None = None
        error: Exception | None = None
        for item in plan:
            if self._recovery is None:
                break  # the user took over (a load, Eject)
            if first is not None and not worker.ready:
                break  # the worker is gone again: the rest stay recorded for next time
            self._reloading = item.model_id
            try:
                if first is None:
                    first = await launch(item.path, item.options)
                else:
                    await self._reload_beside(item, worker)
                    self._note(item.model_id, None)
            except (SupervisorError, ModelLoadError, WorkerError) as exc:
                error = error or exc
                reason = (getattr(exc, "message", None) or str(exc)).splitlines()[0]
                log.warning("could not bring back %s: %s", item.model_id, reason)
                self._record.forget(item.model_id)
                self._note(item.model_id, reason)
            finally:
                self._reloading = None
        if first is None:
            assert error is not None
            raise error
        back = self._recovery.back if self._recovery is not None else ()
        client = worker.client
        if client is not None:
            await restore_order(client, [m for m in recent_first if m in back])
        return first

    def _note(self, model_id: str, failure: str | None) -> None:
        """Say how the reloads go: ``model_id`` is back (``failure`` None) or not."""
        recovery = self._recovery
        if recovery is None:
            return  # the user took over meanwhile
        if failure is None:
            recovery = recovery.came_back(model_id)
        else:
            recovery = recovery.failed_with(model_id, failure)
        self._recovery = recovery
        self._on_change(recovery)

    @staticmethod
    async def _reload_beside(item: Returning, worker: LiveWorker) -> None:
        refusal = fit_refusal(await worker.residency(), item)
        if refusal is not None:  # the fresh worker's budget may be smaller
            raise ModelLoadError(refusal)
        await load_beside(worker.live_client(), item.path, item.options, replace=False)
