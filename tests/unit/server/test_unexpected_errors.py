"""An unexpected exception is a 500 in the dialect's shape that leaves the keep-alive
connection usable, over real HTTP (uvicorn), as the worker serves it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from hearth.server.errors import install_error_handlers
from server_process import free_port


def _app() -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/v1/boom")
    @app.get("/api/boom")
    async def boom() -> None:
        raise ValueError("embedded null byte")

    @app.get("/ok")
    async def ok() -> dict[str, bool]:
        return {"ok": True}

    return app


@pytest.fixture
def base_url() -> Iterator[str]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(_app(), host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.01)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def _local_port(response: httpx.Response) -> int:
    return int(response.extensions["network_stream"].get_extra_info("socket").getsockname()[1])


def test_a_500_keeps_the_connection_and_the_dialects_shape(base_url):
    with httpx.Client(base_url=base_url) as client:
        openai = client.get("/v1/boom")
        assert openai.status_code == 500
        assert openai.json()["error"]["message"] == "Internal error: ValueError"
        assert openai.json()["error"]["type"] == "server_error"
        ollama = client.get("/api/boom")
        assert ollama.status_code == 500
        assert ollama.json() == {"error": "Internal error: ValueError"}
        ok = client.get("/ok")
        assert ok.json() == {"ok": True}
        assert _local_port(openai) == _local_port(ollama) == _local_port(ok)
