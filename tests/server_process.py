"""Running a real ``hearth serve`` subprocess for tests (helpers; fixtures live in conftest)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ServeProcess:
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    api_key: str | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


def start_serve(
    model: Path | None,
    log_dir: Path,
    *extra: str,
    api_key: str | None = None,
    ctx: int = 512,
    parallel: int = 4,
    wait: bool = True,
) -> ServeProcess:
    """``hearth serve`` with ``extra`` flags; on a free port unless ``extra`` names one
    (``"--port", P``), and ``ServeProcess.port`` is the port it was given either way."""
    port, extra = _port_of(extra)
    log_path = log_dir / f"serve-{port}.log"
    args = [
        sys.executable,
        "-m",
        "hearth",
        "serve",
        *(["--model", str(model)] if model else []),
        "--port",
        str(port),
        "--ctx",
        str(ctx),
        "--parallel",
        str(parallel),
        "--threads",
        "2",
        *extra,
    ]
    if api_key:
        args += ["--api-key", api_key]
    env = {k: v for k, v in os.environ.items() if k not in ("HEARTH_API_KEY",)}
    with log_path.open("wb") as log:
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
    server = ServeProcess(process, port, log_path, api_key)
    if wait:
        wait_healthy(server)
    return server


def _port_of(extra: tuple[str, ...]) -> tuple[int, tuple[str, ...]]:
    """The port ``extra`` asks for (its last ``--port P`` or ``--port=P``, as argparse
    reads it) or a free one, and ``extra`` without it: the port is passed once."""
    port: int | None = None
    rest: list[str] = []
    args = iter(extra)
    for arg in args:
        if arg == "--port":
            port = int(next(args))
        elif arg.startswith("--port="):
            port = int(arg.removeprefix("--port="))
        else:
            rest.append(arg)
    return (port if port is not None else free_port()), tuple(rest)


def wait_healthy(server: ServeProcess, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"hearth serve exited early:\n{server.log_text()}")
        try:
            response = httpx.get(f"{server.base_url}/health", timeout=2)
            if response.status_code == 200 and response.json().get("status") == "ok":
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    server.stop()
    raise TimeoutError(f"hearth serve did not become healthy:\n{server.log_text()}")
