"""``hearth run`` and ``hearth ps`` as a person uses them, against real workers."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time

from hearth.config.runtime import running
from hearth.library.library import Library
from server_process import start_serve

HEARTH = [sys.executable, "-m", "hearth"]


def _hearth(*args: str, stdin: str = "", timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HEARTH, *args], input=stdin, capture_output=True, text=True, timeout=timeout
    )


def test_ps_with_nothing_running():
    result = _hearth("ps")
    assert result.returncode == 0
    assert "Nothing is running" in result.stdout
    assert json.loads(_hearth("ps", "--json").stdout) == []


def test_run_answers_once_with_its_own_worker(tiny_model_q8):
    Library().import_in_place(tiny_model_q8)
    result = _hearth("run", "hearth-tiny-Q8_0", "Say", "hi", "--max-tokens", "5", "--seed", "1")
    assert result.returncode == 0, result.stderr
    assert "Loading hearth-tiny-Q8_0.gguf" in result.stderr
    assert result.stdout.strip()  # the streamed reply
    assert running() == []  # its worker stopped with it


def test_run_uses_the_running_worker_and_ps_lists_it(tiny_model_q8, tmp_path):
    Library().import_in_place(tiny_model_q8)
    server = start_serve(tiny_model_q8, tmp_path)
    try:
        before = json.loads(_hearth("ps", "--json").stdout)
        assert [(w["pid"], w["model"], w["state"], w["kind"]) for w in before] == [
            (server.process.pid, "hearth-tiny-Q8_0", "ready", "serve")
        ]
        table = _hearth("ps").stdout
        assert "hearth-tiny-Q8_0" in table and "kept loaded" in table
        load_id = _status(server.base_url)["load_id"]

        piped = _hearth("run", "hearth-tiny-Q8_0", "--max-tokens", "4", stdin="Summarize this")
        assert piped.returncode == 0, piped.stderr
        assert f"worker at {server.base_url}" in piped.stderr
        assert piped.stdout.strip()
        assert [r.pid for r in running()] == [server.process.pid]  # no second worker
        assert _status(server.base_url)["load_id"] == load_id  # and no reload
    finally:
        server.stop()


def test_run_refuses_an_unknown_model():
    result = _hearth("run", "no-such-model", "hi")
    assert result.returncode == 1
    assert "not in the library" in result.stderr


def test_interactive_chat_keeps_history_and_leaves_with_bye(tiny_model_q8, tmp_path):
    """A terminal session: a message, a multi-line message, /clear, /bye."""
    Library().import_in_place(tiny_model_q8)
    server = start_serve(tiny_model_q8, tmp_path)
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [*HEARTH, "run", "hearth-tiny-Q8_0", "--max-tokens", "3"],
        stdin=follower, stdout=follower, stderr=follower, close_fds=True,
    )  # fmt: skip
    os.close(follower)
    screen = b""

    def until(text: bytes, count: int = 1, timeout: float = 60) -> None:
        """Read the terminal until ``text`` has appeared ``count`` times."""
        nonlocal screen
        deadline = time.monotonic() + timeout
        while screen.count(text) < count:
            assert time.monotonic() < deadline, f"never saw {text!r} x{count} in {screen!r}"
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                screen += os.read(leader, 4096)

    try:
        until(b">>> ")
        os.write(leader, b"hello\n")
        until(b">>> ", count=2)  # the reply streamed, and the next prompt
        os.write(leader, b'"""first line\n')
        until(b"... ")  # the continuation prompt
        os.write(leader, b'second line"""\n')
        until(b">>> ", count=3)
        os.write(leader, b"/clear\n")
        until(b"Cleared the conversation")
        os.write(leader, b"/bye\n")
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
        os.close(leader)
        server.stop()


def _status(url: str) -> dict:
    import httpx

    return httpx.get(f"{url}/hearth/v1/status").json()
