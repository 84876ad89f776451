"""GUI/CLI side of the worker: process lifecycle and a typed async API client.

No Qt here: the GUI adapts these to its own event loop (qasync) and signals.
"""

from hearth.core.errors import ModelLoadError
from hearth.supervisor.client import (
    ChatStreamStats,
    Health,
    ModelMeta,
    WorkerClient,
    WorkerError,
    WorkerUnavailableError,
)
from hearth.supervisor.launch_options import (
    DEFAULT_ENDPOINT_PORT,
    EndpointOptions,
    LoadOptions,
    WorkerOptions,
)
from hearth.supervisor.process import WorkerExitedError, WorkerProcess, worker_command
from hearth.supervisor.supervisor import Supervisor
from hearth.supervisor.worker_status import (
    KeyStoreError,
    StartTimeoutError,
    SupervisorError,
    WorkerStartError,
    WorkerState,
    WorkerStatus,
)

__all__ = [
    "DEFAULT_ENDPOINT_PORT",
    "ChatStreamStats",
    "EndpointOptions",
    "Health",
    "KeyStoreError",
    "LoadOptions",
    "ModelLoadError",
    "ModelMeta",
    "StartTimeoutError",
    "Supervisor",
    "SupervisorError",
    "WorkerClient",
    "WorkerError",
    "WorkerExitedError",
    "WorkerOptions",
    "WorkerProcess",
    "WorkerStartError",
    "WorkerState",
    "WorkerStatus",
    "WorkerUnavailableError",
    "worker_command",
]
