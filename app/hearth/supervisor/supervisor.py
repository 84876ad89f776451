"""Start, watch, restart and stop the model worker; hand out a client for it.

States: stopped -> starting -> loading(progress) -> ready; ready -> crashed when the
worker dies on its own; a launch or load that fails ends in error. Every change goes
to ``on_status`` on the event loop's thread.

What the worker holds, and bringing it back after a crash (``restart``), is
``crash_reloads.py``'s: the supervisor tells it what happens to the worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import replace
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
from hearth.core.residency import LoadedModel
from hearth.supervisor.client import Health, WorkerClient, WorkerError, WorkerUnavailableError
from hearth.supervisor.crash_reloads import CrashReloads
from hearth.supervisor.launch_options import EndpointOptions, LoadOptions, WorkerOptions
from hearth.supervisor.process import WorkerExitedError, WorkerProcess
from hearth.supervisor.recovery import Recovery
from hearth.supervisor.residency_loads import load_beside
from hearth.supervisor.residency_status import ResidencyStatus
from hearth.supervisor.worker_status import (
    SupervisorError,
    WorkerState,
    WorkerStatus,
    start_error,
)

log = logging.getLogger(__name__)

DEFAULT_START_TIMEOUT_S = 120.0


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
        self.worker_options = WorkerOptions()  # Settings → Models, for every start()
        self.endpoint_error: str | None = None  # why the endpoint was kept off, if it was
        self.port: int | None = None  # the worker's private port (the app's own)
        self.endpoint_port: int | None = None  # where the endpoint listens; None: closed
        # what the worker holds, and the reloads after a crash (``crash_reloads.py``)
        self._reloads = CrashReloads(self._reloads_changed)

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
        recovery = self._reloads.recovery
        if status.recovery is None and recovery is not None:
            status = replace(status, recovery=recovery)  # said until the user acts
        if status == self._status:
            return
        self._status = status
        log.info("worker status: %s", status)
        if self._on_status is not None:
            try:
                self._on_status(status)
            except Exception:
                log.exception("status callback failed")

    def _reloads_changed(self, recovery: Recovery | None) -> None:
        self._set_status(replace(self._status, recovery=recovery))

    # ------------------------------------------------------------------ start
    def launch_settings(self) -> LaunchSettings:
        """What the next worker is started with: the model, the load choices and
        Settings → Models (``worker_options``). It
        always starts private (loopback, a random port, this launch's token only); the
        endpoint is opened on it once it is ready (see ``set_endpoint``)."""
        path = self.model_path or NO_MODEL
        load = self.options.apply(LoadConfig(model_path=Path(path)))
        if self.model_path is not None:
            # the projector chosen in the Load dialog, else the one beside the model as
            # the Library pairs them, or none; `hearth serve --model PATH` leaves that
            # to --mmproj
            load = replace(load, mmproj_path=self.options.projector_for(Path(self.model_path)))
        settings = LaunchSettings(load=load, parent_pid=os.getpid())  # exits if we die
        return EndpointOptions(enabled=False).apply(self.worker_options.apply(settings))

    async def start(self, model_path: Path | str, options: LoadOptions | None = None) -> str:
        """Launch a worker for ``model_path`` and wait until it serves; returns the model id.

        Replaces any running worker. Raises a SupervisorError subclass with a clear
        message on failure (the worker is stopped then). Cancelling it stops the worker.
        Then the endpoint is opened if it is on; if it can't be (keys unreadable, port
        taken) it stays off, the model still loaded, and ``endpoint_error`` says why.
        """
        self._reloads.user_took_over()
        return await self._start_ready(model_path, options)

    async def _start_ready(self, model_path: Path | str, options: LoadOptions | None) -> str:
        generation = self._generation + 1
        model = await self._start(model_path, options)
        self._reloads.worker_started(Path(model_path), options or LoadOptions(), model)
        await self._apply_endpoint()  # before "ready": the endpoint's state is settled then
        if generation == self._generation:
            self._set_status(WorkerStatus(WorkerState.READY, model=model))
        return model

    async def _start(self, model_path: Path | str, options: LoadOptions | None) -> str:
        await self._stop_worker()
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
        self._set_status(WorkerStatus(WorkerState.STARTING, model=self.model_path.name))
        try:
            model = await asyncio.wait_for(self._launch(proc, token, exited), self._start_timeout)
        except BaseException as exc:
            name = self.model_path.name if self.model_path else "the model"
            error = start_error(exc, proc, name, self._start_timeout)
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
                    if health.model or self.model_path == NO_MODEL:  # remote engines only
                        return health.model or ""
                    return await self._first_model(client)
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
        self._reloads.worker_exited()  # (a model being reloaded is not tried once more)
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
        """Use ``endpoint`` from now on; returns the model id ("" for none loaded), None
        with no worker.

        Every change (on/off, port, LAN, key rule, the key list) goes to the running
        worker live: the model stays loaded and the request log goes on. Turned on with
        no worker running, it starts one without a model, as ``hearth serve`` without
        ``--model`` runs: it listens, lists the library, and a request that names a
        library model loads it. A key store the worker cannot read, or a port another
        program holds, keeps the endpoint off; ``endpoint_error`` says why.
        """
        self.endpoint = endpoint
        if self._process is None:
            if not endpoint.enabled:
                return None
            log.info("starting a worker without a model for the endpoint")
            generation = self._generation
            try:
                return await self.start(NO_MODEL)
            except Exception:
                if self._generation > generation + 1:  # a load replaced this worker at
                    return None  # once; its start() opens the endpoint
                raise
        if self.ready:
            await self._apply_endpoint()
        return self.model_id

    async def _apply_endpoint(self) -> None:
        client, endpoint = self._client, self.endpoint
        self.endpoint_error = None
        if client is None:
            return
        try:
            self.endpoint_port = await client.set_access(
                endpoint.enabled, endpoint.require_key, port=endpoint.port, lan=endpoint.lan
            )
        except WorkerError as exc:
            log.warning("keeping the endpoint off: %s", exc.message)
            self.endpoint = replace(endpoint, enabled=False)  # the worker closed it
            self.endpoint_error = exc.message
            self.endpoint_port = None

    # ------------------------------------------------------------------ residents
    async def residency(self) -> ResidencyStatus:
        """The worker's loaded models and limits (WorkerError without a worker); each
        read is also what a crash would bring back (see ``recovery.py``)."""
        client = self.live_client()
        status = await client.residency()
        if client is self._client:  # (not a worker replaced meanwhile)
            self._reloads.observed(status)
        return status

    async def load_beside(
        self,
        path: Path,
        options: LoadOptions,
        *,
        replace: bool,
        on_progress: Callable[[float | None], None] | None = None,
    ) -> LoadedModel:
        """Load ``path`` into the running worker, beside its models or instead of them
        (``residency_loads.load_beside``), and remember its settings for a crash."""
        client = self.live_client()
        self._reloads.settle()
        loaded = await load_beside(client, path, options, replace=replace, on_progress=on_progress)
        self._reloads.loaded(path, options, loaded.info.id, loaded.memory_bytes, alone=replace)
        return loaded

    async def unload(self, model_id: str) -> None:
        """Eject ``model_id`` from the running worker; it won't come back after a crash."""
        client = self.live_client()
        self._reloads.settle()
        self._reloads.unloaded(model_id)
        await client.unload(model_id)

    def live_client(self) -> WorkerClient:
        """The current worker's client; WorkerUnavailableError without a worker."""
        if self._client is None:
            raise WorkerUnavailableError("The model worker is not running.")
        return self._client

    # ------------------------------------------------------------------ restart
    async def restart(self) -> str:
        """Launch again after a crash and bring back every model the worker held, each
        with its own settings, most recently used first; returns the first one's id.

        A model that can't come back (an error, past the count or memory budget, or
        the worker crashing again while loading it) is named in the status's
        ``recovery`` with why, and is not tried again. With no model recorded (none
        was loaded yet, or the worker served remote engines only) it relaunches with
        the last model and options.
        """
        first = await self._reloads.reload(self._start_ready, self)
        if first is not None:
            return first
        if self.model_path is None:
            raise SupervisorError("No model has been opened yet, so there is nothing to restart.")
        return await self.start(self.model_path, self.options)

    # ------------------------------------------------------------------ stop
    async def _discard(self, proc: WorkerProcess) -> None:
        client = None
        if self._process is proc:
            client, self._client, self._process = self._client, None, None
            self.port = self.endpoint_port = None
        await proc.stop_async()
        if client is not None:
            await client.aclose()

    async def stop(self) -> None:
        """Stop the worker if one runs (terminate, then kill after ~5 s): the user's
        Eject, so nothing comes back after it."""
        self._reloads.stopped()
        await self._stop_worker()

    async def _stop_worker(self) -> None:
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
