"""llama-server for tests, where a binary is at hand: ``HEARTH_LLAMA_SERVER``, or
``llama-server`` on PATH (``bench/README.md`` builds one from the llama-cpp-python sdist's
vendored llama.cpp, so both use the same ggml). Tests that need it skip otherwise."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from server_process import free_port

LLAMA_SERVER = os.environ.get("HEARTH_LLAMA_SERVER") or shutil.which("llama-server")
STARTUP_S = 120


@contextmanager
def running_llama_server(model: Path, log_dir: Path, *extra: str) -> Iterator[str]:
    """llama-server on ``model`` (loopback, a free port, ``extra`` flags): its URL, once
    ``/health`` answers, until the block ends."""
    assert LLAMA_SERVER, "no llama-server binary (set HEARTH_LLAMA_SERVER)"
    port = free_port()
    log = log_dir / f"llama-server-{port}.log"
    argv = [LLAMA_SERVER, "-m", str(model), "--host", "127.0.0.1", "--port", str(port), *extra]
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            assert process.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, log.read_text(errors="replace")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
