"""Start, watch, restart and stop the model worker; hand out a client for it.

States: stopped -> starting -> loading(progress) -> ready; ready -> crashed when the
worker dies on its own; a launch or load that fails ends in error. Every change goes
to ``on_status`` on the event loop's thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path

from hearth.config.launch import (
    API_KEY_ENV,
    LOOPBACK_HOST,
    NO_MODEL,
    WORKER_TOKEN_ENV,
    LaunchSettings,
)
from hearth.core.errors import ModelLoadError
from hearth.core.model_info import LoadConfig
from hearth.supervisor.client import Health, WorkerClient, WorkerError, WorkerUnavailableError
from hearth.supervisor.launch_options import EndpointOptions, LoadOptions
from hearth.supervisor.process import WorkerExitedError, WorkerProcess

log = logging.getLogger(__name__)

DEFAULT_START_TIMEOUT_S = 120.0


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


class SupervisorError(Exception):
    """Base of the errors ``Supervisor.start()`` raises; the message is user-facing."""


class WorkerStartError(SupervisorError):
    """The worker process did not come up (exited, or never said it was listening)."""


class StartTimeoutError(SupervisorError):
    """The worker did not become ready within the time allowed."""


class KeyStoreError(SupervisorError):
    """The endpoint needs the stored API keys and the worker cannot read them."""


KEY_STORE_UNREADABLE = "secret_store_unavailable"  # the worker's refusal code


StatusCallback = Callable[[WorkerStatus], None]


class Supervisor:
    """Owns at most one worker process and the client that talks to it."""

    def __init__(
        self,
        *,
        on_status: StatusCallback | None = None,
        log_dir: Path | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT_S,
        poll_interval: float = 0.1,
        env: Mapping[str, str] | None = None,
        program: list[str] | None = None,
    ) -> None:
        self._on_status = on_status
        self._log_dir = log_dir
        self._start_timeout = start_timeout
        self._poll_interval = poll_interval
        self._env = dict(env or {})
        self._program = program
        self._process: WorkerProcess | None = None
        self._client: WorkerClient | None = None
        self._generation = 0
        self._status = WorkerStatus(WorkerState.STOPPED)
        self.model_path: Path | None = None
        self.options = LoadOptions()
        self.endpoint = EndpointOptions()  # for every start(); see set_endpoint()
        self.endpoint_error: str | None = None  # why the endpoint was kept off, if it was
        self.port: int | None = None  # the port the current worker listens on
        self._bound_host: str | None = None  # the address the current worker bound

    # ------------------------------------------------------------------ facts
    @property
    def status(self) -> WorkerStatus:
        return self._status

    @property
    def client(self) -> WorkerClient | None:
        """The client for the current worker (set once it listens); None without one."""
        return self._client

    @property
    def model_id(self) -> str | None:
        return self._status.model if self._status.state is WorkerState.READY else None

    @property
    def process(self) -> WorkerProcess | None:
        return self._process

    @property
    def ready(self) -> bool:
        return self._status.state is WorkerState.READY

    def _set_status(self, status: WorkerStatus) -> None:
        if status == self._status:
            return
        self._status = status
        log.info("worker status: %s", status)
        if self._on_status is not None:
            try:
                self._on_status(status)
            except Exception:
                log.exception("status callback failed")

    # ------------------------------------------------------------------ start
    def launch_settings(self) -> LaunchSettings:
        """What the next worker is started with: model, load choices and endpoint."""
        path = self.model_path or NO_MODEL
        settings = LaunchSettings(
            load=self.options.apply(LoadConfig(model_path=path)),
            parent_pid=os.getpid(),  # the worker exits if we die
        )
        return self.endpoint.apply(settings)

    async def start(self, model_path: Path | str, options: LoadOptions | None = None) -> str:
        """Launch a worker for ``model_path`` and wait until it serves; returns the model id.

        Replaces any running worker. Raises a SupervisorError subclass with a clear
        message on failure (the worker is stopped then). Cancelling it stops the worker.
        If the endpoint is on but the stored keys cannot be read, the worker starts with
        the endpoint off and ``endpoint_error`` says why (fail closed, model still there).
        """
        self.endpoint_error = None
        try:
            return await self._start(model_path, options)
        except KeyStoreError as exc:
            if not self.endpoint.enabled:
                raise
            log.warning("keeping the endpoint off: %s", exc)
            self.endpoint = replace(self.endpoint, enabled=False)
            self.endpoint_error = str(exc)  # before the status changes: the GUI shows it
            return await self._start(model_path, options)

    async def _start(self, model_path: Path | str, options: LoadOptions | None) -> str:
        await self.stop()
        self._generation += 1
        generation = self._generation
        self.model_path = Path(model_path)
        self.options = options or LoadOptions()
        token = secrets.token_urlsafe(32)
        settings = self.launch_settings()
        exited = asyncio.Event()
        proc = WorkerProcess(
            settings.to_argv(),
            # Only this launch's token opens the worker: a user's HEARTH_API_KEY in our
            # environment must not turn the endpoint on behind the GUI's back.
            env={**self._env, WORKER_TOKEN_ENV: token, API_KEY_ENV: ""},
            log_dir=self._log_dir,
            program=self._program,
            on_exit=lambda rc: self._handle_exit(proc, exited, rc),
        )
        self._process = proc
        self._bound_host = settings.host
        self._set_status(WorkerStatus(WorkerState.STARTING, model=self.model_path.name))
        try:
            model = await asyncio.wait_for(self._launch(proc, token, exited), self._start_timeout)
        except BaseException as exc:
            error = self._start_error(exc, proc)
            exit_code = proc.returncode  # before _discard: only if it ended on its own
            await self._discard(proc)
            if generation != self._generation:
                raise  # superseded by a newer start(); that one reports the status
            if error is None:
                self._set_status(WorkerStatus(WorkerState.STOPPED))
                raise
            if not (isinstance(error, KeyStoreError) and self.endpoint.enabled):
                self._set_status(
                    WorkerStatus(WorkerState.ERROR, message=str(error), exit_code=exit_code)
                )
            raise error from exc
        self._set_status(WorkerStatus(WorkerState.READY, model=model))
        return model

    async def _launch(self, proc: WorkerProcess, token: str, exited: asyncio.Event) -> str:
        proc.start()
        host, port = await proc.wait_listening()
        if host in ("0.0.0.0", "::", ""):  # bound everywhere: talk to it via loopback
            host = LOOPBACK_HOST
        self.port = port
        client = WorkerClient(f"http://{host}:{port}", token)
        self._client = client
        return await self._wait_ready(client, proc, exited)

    def _start_error(
        self, exc: BaseException, proc: WorkerProcess
    ) -> SupervisorError | ModelLoadError | None:
        """Translate a failure during start() into a user-facing error (None: re-raise)."""
        if isinstance(exc, SupervisorError | ModelLoadError):
            return exc
        if isinstance(exc, WorkerExitedError):
            if exc.refusal is not None and exc.refusal.code == KEY_STORE_UNREADABLE:
                return KeyStoreError(exc.refusal.message)
            return WorkerStartError(str(exc))
        if isinstance(exc, asyncio.TimeoutError):
            name = self.model_path.name if self.model_path else "the model"
            msg = (
                f"The model worker did not get {name} ready within "
                f"{self._start_timeout:g} s. It may be too large for this machine."
            )
            tail = proc.log_tail()
            return StartTimeoutError(msg + (f"\nLast output:\n{tail}" if tail else ""))
        if isinstance(exc, OSError):
            return WorkerStartError(f"Could not launch the model worker: {exc}")
        return None

    async def _wait_ready(
        self, client: WorkerClient, proc: WorkerProcess, exited: asyncio.Event
    ) -> str:
        while True:
            if exited.is_set():
                raise WorkerExitedError(proc.returncode, proc.log_tail())
            try:
                health: Health | None = await client.health()
            except WorkerUnavailableError as exc:
                log.debug("health not answered yet: %s", exc)
                health = None
            if health is not None:
                if health.ok:
                    return health.model or await self._first_model(client)
                if health.status == "error" or health.http_status not in (200, 503):
                    fallback = f"The worker could not load the model (HTTP {health.http_status})."
                    raise ModelLoadError(health.error or fallback)
                self._set_status(
                    WorkerStatus(
                        WorkerState.LOADING,
                        progress=health.progress,
                        model=self._status.model,
                    )
                )
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(exited.wait(), self._poll_interval)

    @staticmethod
    async def _first_model(client: WorkerClient) -> str:
        ids = await client.models()
        return ids[0] if ids else "model"

    # ------------------------------------------------------------------ exit
    def _handle_exit(self, proc: WorkerProcess, exited: asyncio.Event, rc: int) -> None:
        exited.set()
        if proc is not self._process or proc.stop_requested:
            return
        if self._status.state is WorkerState.READY:
            tail = proc.log_tail()
            msg = f"The model worker stopped unexpectedly (exit code {rc})."
            if tail:
                msg += f"\nLast output:\n{tail}"
            log.error("%s", msg)
            self._set_status(
                replace(self._status, state=WorkerState.CRASHED, message=msg, exit_code=rc)
            )
        # During start(), start() itself notices the exit and reports the error.

    async def set_endpoint(self, endpoint: EndpointOptions) -> str | None:
        """Use ``endpoint`` from now on; returns the model id, None with no worker.

        Access changes (on/off, key rule, key list) go to the running worker live when
        it already listens where ``endpoint`` wants: the model stays loaded. A new port
        or host relaunches it (same model). A key store the worker cannot read keeps
        the endpoint off; ``endpoint_error`` says why.
        """
        self.endpoint = endpoint
        self.endpoint_error = None
        if self._process is None or self.model_path is None:
            return None
        client = self._client
        if client is not None and self.ready and self._listens_for(endpoint):
            try:
                await client.set_access(endpoint.enabled, endpoint.key_required)
            except WorkerError as exc:
                if exc.code != KEY_STORE_UNREADABLE:
                    raise WorkerStartError(f"The endpoint could not change: {exc}") from exc
                self.endpoint = replace(endpoint, enabled=False)  # the worker closed it
                self.endpoint_error = exc.message
            return self.model_id
        return await self.start(self.model_path, self.options)

    def _listens_for(self, endpoint: EndpointOptions) -> bool:
        """Whether the running worker's address suits ``endpoint`` (off: loopback only)."""
        if self._bound_host != LOOPBACK_HOST and not (endpoint.enabled and endpoint.lan):
            return False
        if not endpoint.enabled:
            return True
        return self._bound_host == endpoint.host and self.port == endpoint.port

    async def restart(self) -> str:
        """Launch again with the last model and options (e.g. after a crash)."""
        if self.model_path is None:
            raise SupervisorError("No model has been opened yet, so there is nothing to restart.")
        return await self.start(self.model_path, self.options)

    # ------------------------------------------------------------------ stop
    async def _discard(self, proc: WorkerProcess) -> None:
        client = None
        if self._process is proc:
            client, self._client, self._process = self._client, None, None
            self.port = self._bound_host = None
        await proc.stop_async()
        if client is not None:
            await client.aclose()

    async def stop(self) -> None:
        """Stop the worker if one runs (terminate, then kill after ~5 s)."""
        proc = self._process
        if proc is None:
            return
        await self._discard(proc)
        self._set_status(WorkerStatus(WorkerState.STOPPED))

    def stop_sync(self) -> None:
        """Blocking stop for shutdown paths where no event loop runs any more."""
        proc, self._process = self._process, None
        self._client = None
        self.port = None
        if proc is not None:
            proc.stop()
            self._set_status(WorkerStatus(WorkerState.STOPPED))
