"""Run a quantization in a child process, with progress and cancel.

The child is this same program re-run as ``hearth --quantize SRC DST TYPE`` (a packaged
app has no separate python to run), which prints JSON lines on stdout (see
``hearth.engine.quantize``). This module never imports llama_cpp: the GUI process stays
free of it, and a crash in llama.cpp only ends the child.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Sequence
from enum import Enum
from pathlib import Path

from hearth.config.launch import relaunch_prefix

log = logging.getLogger(__name__)

STDERR_TAIL_LINES = 40


class JobState(str, Enum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


def default_launcher() -> list[str]:
    """The command prefix that re-runs Hearth (``hearth`` or ``python -m hearth``)."""
    return relaunch_prefix()


def part_path(dst: Path) -> Path:
    return dst.with_name(dst.name + ".part")


ProgressListener = Callable[[float], None]
DoneListener = Callable[["QuantizeJob"], None]


class QuantizeJob:
    """One quantization: ``start()``, watch ``fraction``, ``cancel()`` or ``wait()``.

    ``launcher`` replaces the program prefix; the arguments after it are always
    ``--quantize SRC DST TYPE [--threads N] ...``, or, when ``launcher`` is given with
    ``pass_flag=False``, ``SRC DST TYPE ...`` (for running the entry function directly).
    Listeners are called from a reader thread; GUI code must hop to its own thread.
    """

    def __init__(
        self,
        src: Path,
        dst: Path,
        qtype: str,
        *,
        threads: int = 0,
        allow_requantize: bool = False,
        overwrite: bool = False,
        launcher: Sequence[str] | None = None,
        pass_flag: bool = True,
        on_progress: ProgressListener | None = None,
        on_done: DoneListener | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.src = Path(src)
        self.dst = Path(dst)
        self.qtype = qtype
        args = [str(self.src), str(self.dst), qtype, "--threads", str(threads)]
        if allow_requantize:
            args.append("--allow-requantize")
        if overwrite:
            args.append("--overwrite")
        prefix = list(launcher) if launcher is not None else default_launcher()
        self.command = [*prefix, *(["--quantize"] if pass_flag else []), *args]
        self._env = env
        self._on_progress = on_progress
        self._on_done = on_done
        self._proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._finished = threading.Event()
        self._lock = threading.Lock()
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._cancel_requested = False
        self.state = JobState.PENDING
        self.fraction = 0.0
        self.error: str | None = None
        self.output: Path | None = None

    # ------------------------------------------------------------------ control
    def start(self) -> None:
        if self._proc is not None:
            raise RuntimeError("this quantize job was already started")
        env = dict(os.environ if self._env is None else self._env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        log.info("starting quantize: %s", " ".join(self.command))
        self._proc = subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            env=env,
        )
        self.state = JobState.RUNNING
        threading.Thread(target=self._drain_stderr, name="quantize-stderr", daemon=True).start()
        self._reader = threading.Thread(target=self._read_events, name="quantize", daemon=True)
        self._reader.start()

    def cancel(self, timeout: float = 10.0) -> None:
        """Stop the child and delete its partial output; no-op once finished."""
        with self._lock:
            if self._finished.is_set() or self._proc is None:
                if self._proc is None:
                    self.state = JobState.CANCELLED
                    self._finished.set()
                return
            self._cancel_requested = True
            proc = self._proc
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        self._finished.wait(timeout)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the end; True when it finished (in any state) within ``timeout``."""
        return self._finished.wait(timeout)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    # ------------------------------------------------------------------ reading
    def _drain_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        for line in self._proc.stderr:
            self._stderr.append(line.rstrip())

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    def _read_events(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        for line in proc.stdout:
            self._handle_line(line)
        rc = proc.wait()
        self._finish(rc)

    def _handle_line(self, line: str) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            log.debug("quantize child: %s", line.rstrip())
            return
        if not isinstance(event, dict):
            return
        kind = event.get("event")
        if kind == "progress":
            fraction = event.get("fraction")
            if isinstance(fraction, (int, float)):
                self._set_fraction(float(fraction))
        elif kind == "error":
            self.error = str(event.get("message") or "quantizing failed")
        elif kind == "done" and isinstance(event.get("path"), str):
            self.output = Path(event["path"])

    def _set_fraction(self, fraction: float) -> None:
        self.fraction = max(self.fraction, min(1.0, fraction))
        if self._on_progress is not None:
            try:
                self._on_progress(self.fraction)
            except Exception:
                log.exception("quantize progress listener failed")

    def _finish(self, rc: int) -> None:
        with self._lock:
            if self._cancel_requested:
                self.state = JobState.CANCELLED
                if rc == 0 and self.output is not None:  # it finished just before cancel
                    self.dst.unlink(missing_ok=True)
                    self.output = None
            elif rc == 0 and self.dst.exists():
                self.state = JobState.DONE
                self.output = self.dst
                self._set_fraction(1.0)
            else:
                self.state = JobState.FAILED
                if self.error is None:
                    tail = self.stderr_tail().strip().splitlines()[-3:]
                    self.error = f"Quantizing stopped unexpectedly (exit status {rc})." + (
                        " " + " ".join(tail) if tail else ""
                    )
            if self.state is not JobState.DONE:
                part_path(self.dst).unlink(missing_ok=True)
            self._finished.set()
        log.info("quantize %s -> %s: %s", self.src.name, self.dst.name, self.state.value)
        if self._on_done is not None:
            try:
                self._on_done(self)
            except Exception:
                log.exception("quantize done listener failed")
