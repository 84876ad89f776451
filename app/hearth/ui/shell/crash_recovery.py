"""Bring the models back after the worker crashes, without the user having to act.

A native crash or an out-of-memory kill takes down only the worker process; the design
promises that the app then restarts it and reloads its models (``Supervisor.restart``:
every model it held, most recently used first). The banner says what happened, how
many models are coming back, and which could not (``recovery_text``). A model that
crashes on every load must not restart forever: after ``max_restarts`` crashes within
``window_s`` the automatic restarts stop and the banner's Restart button is left to the
user; a model whose reload failed is not tried again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer

from hearth.supervisor import WorkerState
from hearth.supervisor.recovery import Recovery

log = logging.getLogger(__name__)

RESTARTING = "Restarting after a crash…"
GAVE_UP = "It keeps crashing, so Hearth stopped restarting it. Click Restart to try again."


def recovery_text(recovery: Recovery) -> str | None:
    """The banner's words for the reloads after a crash (None: all back, nothing to say)."""
    parts = []
    if recovery.pending:
        total = len(recovery.pending) + len(recovery.back)
        parts.append(f"{RESTARTING} reloading {total} model{'s' if total != 1 else ''}")
        if recovery.back:
            parts[-1] += f"; back: {', '.join(recovery.back)}"
        parts[-1] += "."
    elif recovery.failed:
        parts.append("Hearth restarted the model worker after a crash.")
    parts += [f"Could not bring back {name}: {why.rstrip('.')}." for name, why in recovery.failed]
    return " ".join(parts) or None


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
