"""Bring the model back after the worker crashes, without the user having to act.

A native crash or an out-of-memory kill takes down only the worker process; the design
promises that the app then restarts it and reloads the model. The banner says what
happened and that the model is coming back. A model that crashes on every load must
not restart forever: after ``max_restarts`` crashes within ``window_s`` the automatic
restarts stop and the banner's Restart button is left to the user.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer

from hearth.supervisor import WorkerState

log = logging.getLogger(__name__)

RESTARTING = "Restarting it and reloading the model…"
GAVE_UP = "It keeps crashing, so Hearth stopped restarting it. Click Restart to try again."


class CrashRecovery(QObject):
    def __init__(
        self,
        restart: Callable[[], object],
        *,
        delay_ms: int = 1000,
        max_restarts: int = 2,
        window_s: float = 120.0,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._restart = restart
        self.max_restarts = max_restarts
        self.window_s = window_s
        self._crashes: list[float] = []
        self.recovering = False  # from the crash until the model is ready again
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(delay_ms)
        self.timer.timeout.connect(self._fire)

    def on_status(self, state: WorkerState) -> str | None:
        """Track the worker's state; returns what the banner should add, if anything."""
        if state is WorkerState.CRASHED:
            now = time.monotonic()
            self._crashes = [t for t in self._crashes if now - t < self.window_s] + [now]
            if len(self._crashes) > self.max_restarts:
                self.cancel()
                log.warning("the worker crashed %d times; not restarting it", len(self._crashes))
                return GAVE_UP
            self.recovering = True
            self.timer.start()
            return RESTARTING
        if state in (WorkerState.STOPPED, WorkerState.STARTING, WorkerState.LOADING):
            # (the restart first clears away the dead worker: STOPPED, then STARTING)
            return RESTARTING if self.recovering else None
        self.recovering = False  # ready, or a load error (which is not retried)
        return None

    def cancel(self) -> None:
        """The user took over (Restart, another model, eject, closing): no automatic
        restart, and the banner stops saying one is coming."""
        self.timer.stop()
        self.recovering = False

    def _fire(self) -> None:
        log.info("restarting the worker after a crash")
        self._restart()
