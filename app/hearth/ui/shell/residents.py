"""The worker's loaded models as the window knows them: read from the worker's status
every few seconds while it runs, and at once after a load or an eject.

One owner for the window's copy (the top bar's chips, the chat's choice of model and
the Load dialog's estimate all read it here). The read is an HTTP call awaited on the
loop, so the Qt thread never waits for it; a read that fails (the worker is starting or
stopping) leaves the last list until the supervisor says the worker is gone.
"""

from __future__ import annotations

import asyncio
import logging

from PySide6.QtCore import QObject, QTimer, Signal

from hearth.core.residency import LoadedModel, ResidencyLimits
from hearth.supervisor import Supervisor, WorkerError, WorkerState, WorkerStatus
from hearth.ui.tasks import TaskSet

log = logging.getLogger(__name__)

POLL_MS = 2000  # busy slots and "expires in" move slowly; an eject or load reads at once


class Residents(QObject):
    """``models`` (least recently used first) and ``limits``; ``changed`` after each
    read (an expiry counts down though nothing else changed) and when they're gone."""

    changed = Signal()

    def __init__(self, supervisor: Supervisor, tasks: TaskSet, parent: QObject) -> None:
        super().__init__(parent)
        self.supervisor = supervisor
        self._tasks = tasks
        self.models: tuple[LoadedModel, ...] = ()
        self.limits: ResidencyLimits | None = None
        self._reading: asyncio.Task[None] | None = None
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self.refresh)

    @property
    def ids(self) -> list[str]:
        return [m.info.id for m in self.models]

    @property
    def used_bytes(self) -> int:
        return sum(m.memory_bytes for m in self.models)

    def on_status(self, status: WorkerStatus) -> None:
        """The supervisor's status: read while a worker serves; forget when it's gone."""
        if status.state is WorkerState.READY:
            if not self._timer.isActive():
                self._timer.start()
            self.refresh()
        elif status.state is not WorkerState.LOADING:
            self._timer.stop()
            self._set((), None)

    def refresh(self) -> asyncio.Task[None]:
        """Read the worker's loaded models now (joins a read already under way)."""
        if self._reading is None or self._reading.done():
            self._reading = self._tasks.spawn(self._read(), name="resident-models")
        return self._reading

    async def _read(self) -> None:
        client = self.supervisor.client
        if client is None:
            return
        try:
            status = await self.supervisor.residency()  # what a crash would bring back
        except WorkerError as exc:
            log.debug("no residency status: %s", exc.message)
            return
        if client is self.supervisor.client:  # not a worker replaced meanwhile
            self._set(status.models, status.limits)

    def _set(self, models: tuple[LoadedModel, ...], limits: ResidencyLimits | None) -> None:
        if not models and not self.models and limits == self.limits:
            return
        self.models, self.limits = models, limits
        self.changed.emit()
