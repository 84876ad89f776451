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

from hearth.core.errors import ModelLoadError
from hearth.supervisor.client import Health, WorkerClient, WorkerUnavailableError
from hearth.supervisor.process import WorkerExitedError, WorkerProcess

log = logging.getLogger(__name__)

TOKEN_ENV = "HEARTH_WORKER_TOKEN"
API_KEY_ENV = "HEARTH_API_KEY"
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


@dataclass(frozen=True)
class LoadOptions:
    """Worker load knobs; None leaves the worker's own default."""

    n_ctx: int | None = None
    n_parallel: int | None = None
    n_gpu_layers: int | None = None
    n_threads: int | None = None
    cache_type_k: str | None = None  # "f16", "q8_0", ...
    cache_type_v: str | None = None
    flash_attention: str | None = None  # "auto", "on" or "off"
    use_mmap: bool = True  # False: read the whole file into memory (--no-mmap)
    use_mlock: bool = False  # True: keep the model locked in RAM (--mlock)

    def to_args(self) -> list[str]:
        args: list[str] = []
        for flag, value in (
            ("--ctx", self.n_ctx),
            ("--parallel", self.n_parallel),
            ("--n-gpu-layers", self.n_gpu_layers),
            ("--threads", self.n_threads),
            ("--cache-type-k", self.cache_type_k),
            ("--cache-type-v", self.cache_type_v),
            ("--flash-attn", self.flash_attention),
        ):
            if value is not None:
                args += [flag, str(value)]
        if not self.use_mmap:
            args.append("--no-mmap")
        if self.use_mlock:
            args.append("--mlock")
        return args


DEFAULT_ENDPOINT_PORT = 8677
LAN_HOST = "0.0.0.0"  # binding every interface is what "LAN" means
LOOPBACK_HOST = "127.0.0.1"


@dataclass(frozen=True)
class EndpointOptions:
    """The public endpoint. Off: a random loopback port that only the GUI's per-launch
    token opens. On: a fixed port (on every interface with ``lan``) that also accepts
    the API keys stored in the keyring."""

    enabled: bool = False
    port: int = DEFAULT_ENDPOINT_PORT
    lan: bool = False

    @property
    def host(self) -> str:
        return LAN_HOST if self.enabled and self.lan else LOOPBACK_HOST

    def to_args(self) -> list[str]:
        if not self.enabled:
            # Endpoint "off": only this launch's token opens the worker.
            return ["--host", LOOPBACK_HOST, "--port", "0", "--no-stored-keys"]
        return ["--host", self.host, "--port", str(self.port)]


class SupervisorError(Exception):
    """Base of the errors ``Supervisor.start()`` raises; the message is user-facing."""


class WorkerStartError(SupervisorError):
    """The worker process did not come up (exited, or never said it was listening)."""


class StartTimeoutError(SupervisorError):
    """The worker did not become ready within the time allowed."""


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
        self.port: int | None = None  # the port the current worker listens on

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
    async def start(self, model_path: Path | str, options: LoadOptions | None = None) -> str:
        """Launch a worker for ``model_path`` and wait until it serves; returns the model id.

        Replaces any running worker. Raises a SupervisorError subclass with a clear
        message on failure (the worker is stopped then). Cancelling it stops the worker.
        """
        await self.stop()
        self._generation += 1
        generation = self._generation
        self.model_path = Path(model_path)
        self.options = options or LoadOptions()
        token = secrets.token_urlsafe(32)
        args = ["--model", str(self.model_path), *self.endpoint.to_args()]
        args += self.options.to_args()
        args += ["--parent-pid", str(os.getpid())]  # the worker exits if we die
        exited = asyncio.Event()
        proc = WorkerProcess(
            args,
            # Only this launch's token opens the worker: a user's HEARTH_API_KEY in our
            # environment must not turn the endpoint on behind the GUI's back.
            env={**self._env, TOKEN_ENV: token, API_KEY_ENV: ""},
            log_dir=self._log_dir,
            program=self._program,
            on_exit=lambda rc: self._handle_exit(proc, exited, rc),
        )
        self._process = proc
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
        """Use ``endpoint`` from now on; relaunch the worker (same model) if one runs.

        Returns the model id after a relaunch, None when no worker was running.
        """
        self.endpoint = endpoint
        if self._process is None or self.model_path is None:
            return None
        return await self.start(self.model_path, self.options)

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
            self.port = None
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
