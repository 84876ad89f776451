"""Supervisor + WorkerClient against the real worker subprocess (`hearth --worker`)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import httpx
import psutil
import pytest

import gguf_factory
from hearth.supervisor import (
    LoadOptions,
    ModelLoadError,
    StartTimeoutError,
    Supervisor,
    SupervisorError,
    WorkerClient,
    WorkerError,
    WorkerStartError,
    WorkerState,
    WorkerStatus,
    worker_command,
)

T = TypeVar("T")

TINY = LoadOptions(n_ctx=512, n_parallel=2)


def run(coro: Coroutine[Any, Any, T], timeout: float = 120.0) -> T:
    return asyncio.run(asyncio.wait_for(coro, timeout))


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _assert_no_workers() -> None:
    for child in psutil.Process().children(recursive=True):
        try:
            alive = child.status() != psutil.STATUS_ZOMBIE
            assert not (alive and "--worker" in child.cmdline()), child
        except psutil.NoSuchProcess:
            pass


def test_worker_command_dev_and_packaged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HEARTH_PACKAGED", raising=False)
    assert worker_command(["--x"]) == [sys.executable, "-m", "hearth", "--worker", "--x"]
    monkeypatch.setenv("HEARTH_PACKAGED", "1")
    assert worker_command(["--x"]) == [sys.executable, "--worker", "--x"]
    monkeypatch.delenv("HEARTH_PACKAGED")
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert worker_command([]) == [sys.executable, "--worker"]


def test_missing_model_fails_fast_with_clear_error(tmp_path: Path) -> None:
    statuses: list[WorkerStatus] = []
    missing = tmp_path / "no-such-model.gguf"

    async def scenario() -> None:
        sup = Supervisor(on_status=statuses.append, log_dir=tmp_path / "logs")
        started = time.monotonic()
        with pytest.raises((SupervisorError, ModelLoadError)) as info:
            await sup.start(missing, TINY)
        assert time.monotonic() - started < 60
        assert isinstance(info.value, WorkerStartError | ModelLoadError)
        assert "no-such-model.gguf" in str(info.value)
        assert sup.status.state is WorkerState.ERROR
        assert sup.status.message == str(info.value)
        assert sup.process is None and sup.client is None

    run(scenario())
    assert statuses[0].state is WorkerState.STARTING
    assert statuses[-1].state is WorkerState.ERROR
    _assert_no_workers()


@pytest.mark.parametrize("kind", ["bad_magic", "truncated"])
def test_corrupt_model_reports_load_error(tmp_path: Path, kind: str) -> None:
    corrupt = gguf_factory.write_corrupt_gguf(tmp_path / f"{kind}.gguf", kind)  # type: ignore[arg-type]

    async def scenario() -> None:
        sup = Supervisor(log_dir=tmp_path / "logs")
        with pytest.raises((SupervisorError, ModelLoadError)) as info:
            await sup.start(corrupt, TINY)
        message = str(info.value)
        assert message.strip()
        assert "Traceback" not in message.splitlines()[0]
        assert sup.status.state is WorkerState.ERROR
        assert sup.process is None

    run(scenario())
    _assert_no_workers()


def test_start_timeout_is_an_error_not_a_hang(tmp_path: Path, tiny_model_q8: Path) -> None:
    async def scenario() -> None:
        sup = Supervisor(log_dir=tmp_path / "logs", start_timeout=0.05)
        with pytest.raises(StartTimeoutError, match=r"did not get .* ready within"):
            await sup.start(tiny_model_q8, TINY)
        assert sup.status.state is WorkerState.ERROR
        assert sup.process is None

    run(scenario())
    _assert_no_workers()


def test_lifecycle_chat_auth_crash_restart_stop(
    tmp_path: Path, tiny_model_q8: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    statuses: list[WorkerStatus] = []
    # A user's API key in the GUI's environment must not open the GUI's worker.
    monkeypatch.setenv("HEARTH_API_KEY", "user-key")

    async def scenario() -> None:
        sup = Supervisor(on_status=statuses.append, log_dir=tmp_path / "logs")
        model = await sup.start(tiny_model_q8, TINY)
        assert sup.ready and sup.model_id == model
        client = sup.client
        assert client is not None and sup.process is not None
        first_pid = sup.process.pid
        assert first_pid is not None
        assert (await client.health()).ok
        assert await client.models() == [model]

        # Streaming works and yields several deltas.
        deltas = [
            d
            async for d in client.stream_chat(
                [{"role": "user", "content": "hi"}], model=model, max_tokens=24, seed=1
            )
        ]
        assert len(deltas) > 1 and "".join(deltas)

        # The per-launch token is required.
        async with WorkerClient(client.base_url) as anonymous:
            with pytest.raises(WorkerError) as info:
                await anonymous.models()
            assert info.value.status == 401
        for key in ("wrong", "user-key"):
            async with WorkerClient(client.base_url, key) as other:
                with pytest.raises(WorkerError) as info:
                    await other.models()
                assert info.value.status == 401

        # An OpenAI error body becomes a typed error carrying the worker's message.
        with pytest.raises(WorkerError) as info:
            async for _ in client.stream_chat([], model=model):
                pass
        assert info.value.status is not None and 400 <= info.value.status < 500
        assert info.value.message

        # Cancelling a stream mid-way leaves the worker serving.
        got: list[str] = []
        streaming = asyncio.Event()

        async def consume() -> None:
            async for d in client.stream_chat(
                [{"role": "user", "content": "go"}], model=model, max_tokens=400
            ):
                got.append(d)
                if len(got) >= 3:
                    streaming.set()

        task = asyncio.ensure_future(consume())
        await asyncio.wait_for(streaming.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        again = [
            d
            async for d in client.stream_chat(
                [{"role": "user", "content": "again"}], model=model, max_tokens=8
            )
        ]
        assert again

        # A crash is reported with the exit code; restart brings it back.
        os.kill(first_pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while sup.status.state is not WorkerState.CRASHED:
            assert time.monotonic() < deadline, sup.status
            await asyncio.sleep(0.02)
        assert sup.status.exit_code == -signal.SIGKILL
        assert "unexpectedly" in (sup.status.message or "")
        assert await sup.restart() == model
        assert sup.process is not None and sup.process.pid != first_pid
        second_pid = sup.process.pid
        assert second_pid is not None

        await sup.stop()
        await sup.stop()  # idempotent
        assert sup.status.state is WorkerState.STOPPED
        assert _gone(first_pid) and _gone(second_pid)

    run(scenario(), timeout=180)
    states = [s.state for s in statuses]
    assert states[0] is WorkerState.STARTING
    assert WorkerState.READY in states and WorkerState.CRASHED in states
    assert states[-1] is WorkerState.STOPPED
    _assert_no_workers()


def test_supervisor_package_is_qt_free() -> None:
    code = "import sys, hearth.supervisor; sys.exit('PySide6' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    assert subprocess.run([sys.executable, "-c", code], env=env, check=False).returncode == 0


def _sse(*payloads: str) -> bytes:
    return "".join(f"data: {p}\n\n" for p in payloads).encode()


def _chunk(text: str) -> str:
    return json.dumps(
        {"object": "chat.completion.chunk", "choices": [{"delta": {"content": text}}]}
    )


@pytest.mark.parametrize(
    ("body", "expected", "error"),
    [
        (_sse(_chunk("a"), _chunk("b"), "[DONE]"), ["a", "b"], None),
        (
            _sse(_chunk("a"), json.dumps({"error": {"message": "decode failed", "type": "x"}})),
            ["a"],
            "decode failed",
        ),
        (_sse(_chunk("a")), ["a"], "without finishing"),
    ],
)
def test_stream_protocol_edges(body: bytes, expected: list[str], error: str | None) -> None:
    """SSE edge cases the real worker rarely produces: in-stream errors, a cut-off body."""
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    async def scenario() -> None:
        client = WorkerClient("http://w", "tok", transport=httpx.MockTransport(handler))
        got: list[str] = []
        try:
            async for delta in client.stream_chat([{"role": "user", "content": "x"}]):
                got.append(delta)
        except WorkerError as exc:
            assert error is not None and error in exc.message
        else:
            assert error is None
        assert got == expected
        await client.aclose()

    run(scenario())
    assert seen == ["Bearer tok"]


def test_the_worker_gets_the_projector_beside_its_model(tmp_path: Path) -> None:
    """The app's worker starts on a file (``--model PATH``): a vision model's projector
    beside it goes along as ``--mmproj``, as the Library pairs them; none, none."""
    from hearth.supervisor import Supervisor

    model = tmp_path / "gemma-3-4b-it-Q4_K_M.gguf"
    model.write_bytes(b"")
    sup = Supervisor(log_dir=tmp_path / "logs")
    sup.model_path = model
    assert sup.launch_settings().load.mmproj_path is None
    projector = tmp_path / "mmproj-gemma-3-4b-it-F16.gguf"
    projector.write_bytes(b"")
    argv = sup.launch_settings().to_argv()
    assert argv[argv.index("--mmproj") + 1] == str(projector)
