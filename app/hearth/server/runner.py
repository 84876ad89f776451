"""Running the worker: bind, announce, load the model in the background, serve.

The socket is bound before the model loads so that the supervisor (or a user's curl)
can watch ``/health`` report load progress instead of getting connection refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Coroutine
from types import FrameType
from typing import Any

import uvicorn

from hearth.config.runtime import WorkerRecord, register, unregister
from hearth.config.runtime import now as runtime_now
from hearth.core.errors import HearthError
from hearth.core.residency import ResidencyLimits
from hearth.core.units import format_bytes
from hearth.engine.engine import Engine
from hearth.server.app import create_app
from hearth.server.catalog import LibraryCatalog
from hearth.server.key_refresh import KeySource
from hearth.server.listeners import bind_socket
from hearth.server.model_manager import ModelManager
from hearth.server.model_memory import default_budget
from hearth.server.options import ServeOptions, validate_options

log = logging.getLogger(__name__)

_PARENT_POLL_S = 1.0


class _GracefulServer(uvicorn.Server):
    """Stop with status 0 after SIGTERM/SIGINT, once the engine has been unloaded.

    uvicorn re-raises the caught signal after shutting down, which would kill the
    process before the model is freed and make every clean stop look like a crash.
    """

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        captured = getattr(self, "_captured_signals", None)
        if isinstance(captured, list):
            captured.clear()


def _announce(host: str, port: int) -> None:
    """The one line on stdout the supervisor waits for (logs go to stderr)."""
    sys.stdout.write(json.dumps({"event": "listening", "host": host, "port": port}) + "\n")
    sys.stdout.flush()


def _parent_alive(pid: int) -> bool:
    if os.getppid() != pid:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _no_crash_dialogs() -> None:
    """A crashing worker must not pop up Windows' error-report dialog: the GUI reports
    the crash and restarts it."""
    if sys.platform == "win32":
        import ctypes

        sem_failcriticalerrors, sem_nogpfaulterrorbox, sem_noopenfileerrorbox = 1, 2, 0x8000
        ctypes.windll.kernel32.SetErrorMode(  # type: ignore[attr-defined,unused-ignore]
            sem_failcriticalerrors | sem_nogpfaulterrorbox | sem_noopenfileerrorbox
        )


def _run_event_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run on uvloop where it exists (not on Windows): every streamed token passes through
    the event loop, and on a small CPU its time comes out of the decode threads' share
    (uvloop with httptools cut it from about 0.4 to 0.23 ms per token here)."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
        return
    uvloop.run(main)


def run_server(options: ServeOptions) -> int:
    if options.announce:
        _no_crash_dialogs()
    problems = validate_options(options)
    if problems:
        for problem in problems:
            log.error("%s", problem)
        return 2
    try:
        sock = bind_socket(options.host, options.port)
    except OSError as exc:
        log.error(
            "Cannot listen on %s:%s: %s. Is another server using this port? "
            "Pick another with --port.",
            options.host,
            options.port,
            exc.strerror,
        )
        return 1
    port = sock.getsockname()[1]
    policy = options.access_policy()
    load_failed = threading.Event()
    running: list[_GracefulServer] = []

    def initial_load_failed(_exc: HearthError) -> None:
        load_failed.set()
        if not options.announce:  # headless: nothing to serve, so stop
            for serving in running:
                serving.should_exit = True

    held = options.residency
    budget = held.memory_budget_bytes
    if budget is None:
        budget = default_budget()
    log.info("Up to %d models at once within %s of memory", held.max_models, format_bytes(budget))
    models = ModelManager(
        lambda: Engine(prompt_cache=options.prompt_cache),  # one per loaded model
        catalog=LibraryCatalog(),
        base_config=options.load,
        ttl_s=options.ttl_s,
        jit_ttl_s=held.jit_ttl_s,
        jit=options.jit,
        initial=options.initial_model,
        on_initial_failure=initial_load_failed,
        limits=ResidencyLimits(held.max_models, budget),
        queue_timeout_s=held.load_queue_timeout_s,
        queue_size=held.load_queue_size,
    )
    access_for = options.access_for if options.worker_token else None
    key_source = (
        KeySource(options.given_keys, options.read_stored) if options.use_stored_keys else None
    )
    app = create_app(
        policy,
        models=models,
        cors_origins=options.cors_origins,
        access_for=access_for,
        key_source=key_source,
    )
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=3,
        log_config=None,
    )
    server = _GracefulServer(config)
    running.append(server)

    def watch_parent(pid: int) -> None:
        while not server.should_exit:
            if not _parent_alive(pid):
                log.warning("parent process %d is gone; shutting down", pid)
                server.should_exit = True
                return
            time.sleep(_PARENT_POLL_S)

    if options.announce:
        _announce(options.host, port)
    if options.initial_model:
        log.info("Listening on http://%s:%d; loading %s", options.host, port,
                 options.load.model_path)  # fmt: skip
    else:
        log.info("Listening on http://%s:%d; requests load models from the library",
                 options.host, port)  # fmt: skip
    if options.parent_pid:
        threading.Thread(
            target=watch_parent, args=(options.parent_pid,), name="hearth-parent", daemon=True
        ).start()
    record = WorkerRecord(
        pid=os.getpid(),
        host=options.host,
        port=port,
        kind="app" if options.announce else "serve",
        started=runtime_now(),
        token=options.worker_token,
    )
    with contextlib.suppress(OSError):  # `hearth ps` and `hearth run` find it by this
        register(record)
    try:
        _run_event_loop(server.serve(sockets=[sock]))
    finally:
        unregister(record.pid)
        with contextlib.suppress(Exception):
            models.shutdown("The server is shutting down.")
        sock.close()
    return 1 if load_failed.is_set() and not options.announce else 0
