"""Running the configured MCP servers: started on demand, stopped when idle.

Each server is one :class:`_Connection`: an asyncio task that enters the SDK's
``Client`` (so anyio's cancel scopes open and close in the same task) and then runs the
calls put on its queue, one at a time, until it has been idle for ``idle_stop``
seconds. A call has its own timeout (30 s by default); a server that hangs, crashes or
never starts is a ``ToolCallError`` that says so, the server's status says why, and the
next call starts it again. A call its caller gives up on (the chat's Stop, or that
timeout) is cancelled at the server too (MCP's ``notifications/cancelled``, see
``_perform``), and the connection goes on to the next call. Nothing here blocks the
caller's loop: the app's qasync loop or the CLI's ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, TextIO

from hearth.tools.mcp_config import McpConfig, McpServerEntry, SecretLookup
from hearth.tools.mcp_session import ServerSession, open_session

log = logging.getLogger(__name__)

CALL_TIMEOUT_S = 30.0
START_TIMEOUT_S = 30.0
IDLE_STOP_S = 300.0


class ServerState(str, Enum):
    STOPPED = "stopped"
    STARTING = "starting"
    RUNNING = "running"
    FAILED = "failed"


@dataclass(frozen=True)
class ToolInfo:
    server: str
    name: str
    description: str
    input_schema: dict[str, Any]

    @property
    def summary(self) -> str:
        """The description's first line: what a list shows."""
        return self.description.strip().split("\n", 1)[0].strip()


@dataclass(frozen=True)
class ToolResult:
    """What a tool gave back, as text for the model, and how long it took."""

    text: str
    is_error: bool
    seconds: float
    structured: dict[str, Any] | None = None


@dataclass(frozen=True)
class ServerStatus:
    name: str
    state: ServerState
    error: str | None = None
    tools: tuple[ToolInfo, ...] = ()


class ToolCallError(RuntimeError):
    """A server could not run a call: it won't start, it crashed, or it timed out."""

    def __init__(self, server: str, message: str) -> None:
        super().__init__(message)
        self.server = server


_Job = Callable[[ServerSession], Coroutine[Any, Any, Any]]


@dataclass
class _Connection:
    entry: McpServerEntry
    secrets: SecretLookup | None
    log_dir: Path | None
    idle_stop: float
    start_timeout: float
    on_change: Callable[[ServerStatus], None]
    status: ServerStatus = field(init=False)
    _queue: asyncio.Queue[tuple[_Job, asyncio.Future[Any]]] = field(init=False)
    _task: asyncio.Task[None] | None = field(default=None, init=False)
    _ready: asyncio.Future[tuple[ToolInfo, ...]] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.status = ServerStatus(self.entry.name, ServerState.STOPPED)
        self._queue = asyncio.Queue()

    def _set(self, status: ServerStatus) -> None:
        self.status = status
        self.on_change(status)

    async def started(self) -> tuple[ToolInfo, ...]:
        """The server's tools, starting it first if it isn't running (or has failed:
        a crashed server is started again once its old task has wound down)."""
        if self._task is not None and self.status.state is ServerState.FAILED:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        if self._task is None or self._task.done():
            self._ready = asyncio.get_running_loop().create_future()
            self._set(ServerStatus(self.entry.name, ServerState.STARTING))
            self._task = asyncio.create_task(self._run(), name=f"mcp-{self.entry.name}")
        assert self._ready is not None
        if self._ready.done():  # running: no wait_for, whose 3.11 form loses a Stop
            return self._ready.result()  # that comes just as its future is done
        try:
            return await asyncio.wait_for(asyncio.shield(self._ready), self.start_timeout)
        except TimeoutError:
            reason = f"it did not start within {self.start_timeout:g} s"
            await self.stop(ServerStatus(self.entry.name, ServerState.FAILED, reason))
            raise ToolCallError(self.entry.name, self._sentence(reason)) from None

    async def run(self, job: _Job, timeout: float) -> Any:
        """Run ``job`` on the session; past ``timeout`` (the job's own limit, with a
        second's grace for the server's answer to that) it is abandoned."""
        await self.started()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        await self._queue.put((job, future))
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout + 1.0)
        except asyncio.CancelledError:  # Stop: the server is told too (see _perform)
            future.cancel()
            raise
        except TimeoutError:
            future.cancel()
            raise ToolCallError(
                self.entry.name,
                f"The MCP server {self.entry.name!r} did not answer within "
                f"{timeout:g} s; the call was abandoned.",
            ) from None

    async def stop(self, status: ServerStatus | None = None) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._set(status or ServerStatus(self.entry.name, ServerState.STOPPED))

    def _sentence(self, reason: str) -> str:
        return f"The MCP server {self.entry.name!r} can't be used: {reason}."

    async def _run(self) -> None:
        errlog = self._open_log()
        try:
            entry = self.entry
            if self.secrets is not None:  # the keyring can block: not on the caller's loop
                entry = await asyncio.to_thread(entry.with_secrets, self.secrets)
            async with open_session(entry, errlog) as session:
                tools = tuple(
                    ToolInfo(entry.name, t.name, t.description, t.input_schema)
                    for t in await session.list_tools()
                )
                self._set(ServerStatus(entry.name, ServerState.RUNNING, tools=tools))
                if self._ready is not None and not self._ready.done():
                    self._ready.set_result(tools)
                await self._serve(session)
            self._set(ServerStatus(entry.name, ServerState.STOPPED))
        except asyncio.CancelledError:
            self._fail_waiting("it was stopped")
            raise
        except Exception as exc:  # a crash, a refused start: the status says which
            reason = _reason(exc, errlog)
            log.warning("MCP server %s failed: %s", self.entry.name, reason)
            self._set(ServerStatus(self.entry.name, ServerState.FAILED, reason))
            self._fail_waiting(reason)
        finally:
            if errlog is not None:
                errlog.close()

    async def _serve(self, session: ServerSession) -> None:
        while True:
            try:
                job, future = await asyncio.wait_for(self._queue.get(), self.idle_stop)
            except TimeoutError:
                log.info(
                    "MCP server %s idle for %g s: stopping it", self.entry.name, self.idle_stop
                )
                return
            if future.done():  # abandoned (Stop, or a timeout) before it began
                continue
            done = await _perform(job, session, future)
            if done.cancelled():  # abandoned while it ran: the server was told
                log.info("MCP server %s: a call was cancelled", self.entry.name)
                continue
            exc = done.exception()
            if isinstance(exc, ConnectionError):  # the server went away: this task ends
                reason = str(exc)
                self._set(ServerStatus(self.entry.name, ServerState.FAILED, reason))
                if not future.done():
                    future.set_exception(ToolCallError(self.entry.name, self._sentence(reason)))
                raise exc
            if future.done():
                continue
            if exc is not None:
                future.set_exception(exc)
            else:
                future.set_result(done.result())

    def _fail_waiting(self, reason: str) -> None:
        error = ToolCallError(self.entry.name, self._sentence(reason))
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(error)
            self._ready.exception()  # retrieved: a start nobody awaits isn't an error
        while not self._queue.empty():
            _job, future = self._queue.get_nowait()
            if not future.done():
                future.set_exception(error)

    def _open_log(self) -> TextIO | None:
        """The server's stderr goes to its own log: the reason when it fails to start."""
        if self.log_dir is None or self.entry.transport != "stdio":
            return None
        self.log_dir.mkdir(parents=True, exist_ok=True)
        path = self.log_dir / f"mcp-{_safe(self.entry.name)}.log"
        return path.open("w+", encoding="utf-8", errors="replace")  # this run only


async def _perform(
    job: _Job, session: ServerSession, future: asyncio.Future[Any]
) -> asyncio.Task[Any]:
    """Run ``job`` in a task of its own, cancelled when its caller gives up on ``future``
    (the chat's Stop, or the host's timeout), and return that task once it is done.

    Cancelling the task that awaits an SDK request is what makes the SDK send MCP's
    ``notifications/cancelled`` with the request's id (``JSONRPCDispatcher.
    send_raw_request`` catches the cancellation and writes the notice, shielded, before
    it re-raises), so the server stops the work; the connection itself stays open for
    the next call. A task of its own, so that the job's cancellation is not this
    connection's: when the connection is stopped, the job is cancelled with it."""
    task: asyncio.Task[Any] = asyncio.create_task(job(session), name="mcp-call")

    def abandon(settled: asyncio.Future[Any]) -> None:
        if settled.cancelled():
            task.cancel()

    future.add_done_callback(abandon)
    try:
        await asyncio.wait({task})  # the job's own cancellation does not raise here
    except asyncio.CancelledError:  # the connection is stopping: the call goes with it
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        raise
    finally:
        future.remove_done_callback(abandon)
    return task


class McpHost:
    """The configured servers, each started when first needed."""

    def __init__(
        self,
        config: McpConfig,
        *,
        secrets: SecretLookup | None = None,
        log_dir: Path | None = None,
        call_timeout: float = CALL_TIMEOUT_S,
        start_timeout: float = START_TIMEOUT_S,
        idle_stop: float = IDLE_STOP_S,
        on_change: Callable[[ServerStatus], None] | None = None,
    ) -> None:
        self.config = config
        self.call_timeout = call_timeout
        notify = on_change or (lambda _status: None)
        self._connections = {
            entry.name: _Connection(entry, secrets, log_dir, idle_stop, start_timeout, notify)
            for entry in config.enabled
        }

    def status(self, server: str) -> ServerStatus:
        return self._connection(server).status

    def statuses(self) -> list[ServerStatus]:
        return [c.status for c in self._connections.values()]

    async def tools(self, server: str) -> tuple[ToolInfo, ...]:
        """The server's tools (it is started if it isn't running)."""
        return await self._connection(server).started()

    async def call(
        self, server: str, tool: str, arguments: dict[str, Any], timeout: float | None = None
    ) -> ToolResult:
        """Call ``tool``; a tool that reports an error is a result with ``is_error``, and
        a server that can't answer is a ``ToolCallError``."""
        limit = timeout or self.call_timeout
        began = time.perf_counter()

        async def job(session: ServerSession) -> ToolResult:
            text, is_error, structured = await session.call_tool(tool, arguments, limit)
            return ToolResult(text, is_error, time.perf_counter() - began, structured)

        result: ToolResult = await self._connection(server).run(job, limit)
        return result

    async def stop(self, server: str) -> None:
        await self._connection(server).stop()

    async def close(self) -> None:
        await asyncio.gather(*(c.stop() for c in self._connections.values()))

    def _connection(self, server: str) -> _Connection:
        try:
            return self._connections[server]
        except KeyError:
            self.config.server(server)  # raises with the configured names
            raise ToolCallError(server, f"The MCP server {server!r} is turned off.") from None


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:64] or "server"


def _reason(exc: BaseException, errlog: TextIO | None) -> str:
    """Why a server failed, in a few words: the error, or the end of what it printed."""
    grouped = getattr(exc, "exceptions", None)  # an ExceptionGroup from anyio's task group
    if isinstance(grouped, tuple) and grouped and isinstance(grouped[0], BaseException):
        return _reason(grouped[0], errlog)
    if isinstance(exc, FileNotFoundError):
        return f"its command was not found ({exc.filename or exc})"
    if isinstance(exc, PermissionError):
        return f"its command can't be run ({exc.filename or exc}: permission denied)"
    text = str(exc) or type(exc).__name__
    if "Connection closed" in text:
        text = "it exited or closed the connection"
    tail = _log_tail(errlog)
    return f"{text} (its last words: {tail})" if tail else text


def _log_tail(errlog: TextIO | None, limit: int = 300) -> str:
    if errlog is None:
        return ""
    try:
        errlog.flush()
        errlog.seek(0)
        lines = [line.strip() for line in errlog.read()[-4000:].splitlines() if line.strip()]
    except (OSError, ValueError):
        return ""
    return lines[-1][-limit:] if lines else ""
