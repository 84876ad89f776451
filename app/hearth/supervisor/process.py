"""The worker as an operating-system process: launch, watch, stop.

The worker is this same program re-run with ``--worker`` (never ``multiprocessing``):
packaged apps have no separate ``python`` to spawn. It prints one JSON line,
``{"event": "listening", "host": ..., "port": ...}``, on stdout once its HTTP server
listens; everything else about it goes through that HTTP API.

Two daemon threads per process: one reads stdout lines, one waits for the exit and
hands the return code to the event loop with ``call_soon_threadsafe`` (works for
plain asyncio and for qasync's loop alike).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import hearth
from hearth.config.launch import is_packaged, relaunch_prefix

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 5.0
_LOG_TAIL_BYTES = 4000

_live: weakref.WeakSet[WorkerProcess] = weakref.WeakSet()


class WorkerExitedError(RuntimeError):
    """The worker ended before it said it was listening."""

    def __init__(
        self, returncode: int | None, log_tail: str, refusal: WorkerRefusal | None = None
    ) -> None:
        detail = f"exit code {returncode}" if returncode is not None else "closed its output"
        message = f"The model worker stopped before it was ready ({detail})."
        if refusal is not None:
            message = refusal.message
        elif log_tail:
            message += f"\nLast output:\n{log_tail}"
        super().__init__(message)
        self.returncode = returncode
        self.log_tail = log_tail
        self.refusal = refusal


@dataclass(frozen=True)
class WorkerRefusal:
    """Why the worker declined to start, as it said on stdout (``{"event": "refused"}``)."""

    code: str
    message: str


def worker_command(args: Sequence[str]) -> list[str]:
    """The command line that re-runs this program as a worker with ``args``."""
    return [*relaunch_prefix(), "--worker", *args]


def _child_env(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    if extra:
        env.update(extra)
    env["PYTHONUNBUFFERED"] = "1"
    if not is_packaged():
        # Run from a source checkout too: the child must import the same `hearth`.
        src = str(Path(hearth.__file__).resolve().parent.parent)
        parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        if src not in parts:
            env["PYTHONPATH"] = os.pathsep.join([src, *parts])
    return env


class WorkerProcess:
    """One worker process. Create it, ``start()`` it, await ``wait_listening()``.

    ``on_exit(returncode)`` runs on the event loop that was running at ``start()``
    whenever the process ends, whether it crashed or was stopped
    (see ``stop_requested``).
    """

    def __init__(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        log_dir: Path | None = None,
        on_exit: Callable[[int], None] | None = None,
        program: Sequence[str] | None = None,
    ) -> None:
        self._cmd = [*program, *args] if program is not None else worker_command(args)
        self._env = _child_env(env)
        self._log_dir = log_dir
        self._log_path: Path | None = None
        self._log_offset = 0
        self._on_exit = on_exit
        self._proc: subprocess.Popen[bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listening: asyncio.Future[tuple[str, int]] | None = None
        self._exited = threading.Event()
        self._exited_async: asyncio.Event | None = None
        self._stop_requested = False
        self._lock = threading.Lock()
        self.address: tuple[str, int] | None = None
        self.refusal: WorkerRefusal | None = None
        self._reader: threading.Thread | None = None

    # ------------------------------------------------------------------ facts
    @property
    def command(self) -> list[str]:
        return list(self._cmd)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and not self._exited.is_set()

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    @property
    def log_path(self) -> Path | None:
        return self._log_path

    # ------------------------------------------------------------------ start
    def start(self) -> None:
        """Launch the process. Must be called from a running event loop."""
        if self._proc is not None:
            raise RuntimeError("WorkerProcess.start() may be called only once")
        self._loop = asyncio.get_running_loop()
        self._listening = self._loop.create_future()
        # Whoever waited may have given up (a window closed while the worker started):
        # its exit is then news to nobody, and asyncio must not log it as unretrieved.
        self._listening.add_done_callback(_mark_retrieved)
        self._exited_async = asyncio.Event()
        stderr: IO[bytes] | None = None
        if self._log_dir is not None:
            self._log_dir.mkdir(parents=True, exist_ok=True)
            self._log_path = self._log_dir / "worker.log"
            stderr = self._log_path.open("ab")
            stamp = time.strftime("%Y-%m-%d %H:%M:%S")
            stderr.write(f"\n===== worker start {stamp}: {self._cmd}\n".encode())
            stderr.flush()
            self._log_offset = stderr.tell()
        kwargs: dict[str, Any] = {}
        if sys.platform == "win32":
            kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP
        else:
            kwargs["start_new_session"] = True
        log.info("starting worker: %s", self._cmd)
        try:
            # stdin stays an open pipe: the worker may treat EOF as "the GUI is gone".
            self._proc = subprocess.Popen(
                self._cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=self._env,
                **kwargs,
            )
        finally:
            if stderr is not None:
                stderr.close()
        _live.add(self)
        log.info("worker pid %d", self._proc.pid)
        self._reader = threading.Thread(
            target=self._read_stdout, name="worker-stdout", daemon=True
        )
        self._reader.start()
        threading.Thread(target=self._wait_exit, name="worker-wait", daemon=True).start()

    async def wait_listening(self) -> tuple[str, int]:
        """The (host, port) the worker listens on; raises WorkerExitedError if it died."""
        if self._listening is None:
            raise RuntimeError("start() first")
        return await asyncio.shield(self._listening)

    # ------------------------------------------------------------------ threads
    def _post(self, callback: Callable[..., None], *args: Any) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # loop closed meanwhile
            loop.call_soon_threadsafe(callback, *args)

    def _read_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for raw in self._proc.stdout:
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            event = _parse_event(line)
            if event is not None and event.get("event") == "listening":
                host, port = str(event.get("host", "127.0.0.1")), int(event["port"])
                self._post(self._set_listening, host, port)
            elif event is not None and event.get("event") == "refused":
                refusal = WorkerRefusal(str(event.get("code")), str(event.get("message")))
                self._post(self._set_refusal, refusal)
            else:
                log.debug("worker stdout: %s", line)

    def _wait_exit(self) -> None:
        assert self._proc is not None
        rc = self._proc.wait()
        if self._reader is not None:  # its last lines (a refusal) come before the exit
            self._reader.join(timeout=2.0)
        self._exited.set()
        log.info("worker pid %d exited with %d", self._proc.pid, rc)
        self._post(self._handle_exit, rc)

    # ------------------------------------------------------------------ on loop
    def _set_listening(self, host: str, port: int) -> None:
        self.address = (host, port)
        if self._listening is not None and not self._listening.done():
            self._listening.set_result((host, port))

    def _set_refusal(self, refusal: WorkerRefusal) -> None:
        self.refusal = refusal

    def _handle_exit(self, rc: int) -> None:
        if self._exited_async is not None:
            self._exited_async.set()
        if self._listening is not None and not self._listening.done():
            self._listening.set_exception(WorkerExitedError(rc, self.log_tail(), self.refusal))
        if self._on_exit is not None:
            try:
                self._on_exit(rc)
            except Exception:
                log.exception("worker on_exit callback failed")

    # ------------------------------------------------------------------ logs
    def log_tail(self, max_bytes: int = _LOG_TAIL_BYTES) -> str:
        """The end of what this launch wrote to stderr (only with a log_dir)."""
        if self._log_path is None:
            return ""
        try:
            with self._log_path.open("rb") as f:
                size = f.seek(0, os.SEEK_END)
                f.seek(max(self._log_offset, size - max_bytes))
                return f.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""

    # ------------------------------------------------------------------ stop
    def _signal(self, kill: bool) -> None:
        proc = self._proc
        if proc is None or self._exited.is_set() or proc.poll() is not None:
            return
        try:
            if sys.platform == "win32":
                if kill:
                    proc.kill()
                else:
                    proc.terminate()
            else:
                os.killpg(proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
        except (ProcessLookupError, PermissionError, OSError):
            pass

    def _request_stop(self) -> None:
        self._stop_requested = True
        proc = self._proc
        if proc is not None and proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int | None:
        """Terminate, wait up to ``timeout``, then kill. Blocking; idempotent."""
        with self._lock:
            self._request_stop()
            proc = self._proc
            if proc is None:
                return None
            self._signal(kill=False)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                log.warning("worker pid %d ignored SIGTERM; killing it", proc.pid)
                self._signal(kill=True)
                proc.wait()
            self._exited.wait(1.0)
            _live.discard(self)
            return proc.returncode

    async def stop_async(self, timeout: float = STOP_TIMEOUT_S) -> int | None:
        """Like ``stop()`` without blocking the event loop."""
        self._request_stop()
        proc = self._proc
        if proc is None:
            return None
        exited = self._exited_async
        assert exited is not None
        self._signal(kill=False)
        try:
            await asyncio.wait_for(exited.wait(), timeout)
        except asyncio.TimeoutError:
            log.warning("worker pid %d ignored SIGTERM; killing it", proc.pid)
            self._signal(kill=True)
            await exited.wait()
        _live.discard(self)
        return proc.returncode


def _parse_event(line: str) -> dict[str, Any] | None:
    if not line.startswith("{"):
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


@atexit.register
def _stop_all_workers() -> None:
    """Last line of defence: no worker outlives the program that started it."""
    for worker in list(_live):
        with contextlib.suppress(Exception):
            worker.stop(timeout=2.0)


def _mark_retrieved(future: asyncio.Future[tuple[str, int]]) -> None:
    if not future.cancelled():
        future.exception()
