"""The supervisor's view of its worker: the states it goes through, the status it
reports to the app, and the errors a start raises. Plain values, apart from the
``Supervisor`` that produces them, so the app's widgets can name them alone.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from enum import Enum

from hearth.core.errors import ModelLoadError
from hearth.supervisor.process import WorkerExitedError, WorkerProcess
from hearth.supervisor.recovery import Recovery


class WorkerState(str, Enum):
    STOPPED = "stopped"
    STARTING = "starting"
    LOADING = "loading"
    READY = "ready"
    CRASHED = "crashed"
    ERROR = "error"


@dataclass(frozen=True)
class WorkerStatus:
    state: WorkerState
    progress: float | None = None
    model: str | None = None
    message: str | None = None
    exit_code: int | None = None
    recovery: Recovery | None = None  # the reloads after a crash, while and once they ran


class SupervisorError(Exception):
    """Base of the errors ``Supervisor.start()`` raises; the message is user-facing."""


class WorkerStartError(SupervisorError):
    """The worker process did not come up (exited, or never said it was listening)."""


class StartTimeoutError(SupervisorError):
    """The worker did not become ready within the time allowed."""


class KeyStoreError(SupervisorError):
    """The endpoint needs the stored API keys and the worker cannot read them."""


KEY_STORE_UNREADABLE = "secret_store_unavailable"  # the worker's refusal code


def start_error(
    exc: BaseException, proc: WorkerProcess, name: str, timeout: float
) -> SupervisorError | ModelLoadError | None:
    """Translate a failure while starting the worker for the model ``name`` into a
    user-facing error (None: re-raise it as it is)."""
    if isinstance(exc, SupervisorError | ModelLoadError):
        return exc
    if isinstance(exc, WorkerExitedError):
        if exc.refusal is not None and exc.refusal.code == KEY_STORE_UNREADABLE:
            return KeyStoreError(exc.refusal.message)
        return WorkerStartError(str(exc))
    if isinstance(exc, asyncio.TimeoutError):
        msg = (
            f"The model worker did not get {name} ready within "
            f"{timeout:g} s. It may be too large for this machine."
        )
        tail = proc.log_tail()
        return StartTimeoutError(msg + (f"\nLast output:\n{tail}" if tail else ""))
    if isinstance(exc, OSError):
        return WorkerStartError(f"Could not launch the model worker: {exc}")
    return None
