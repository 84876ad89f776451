"""An engine edited while the server runs lists the new engine's models at once."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from hearth.config.engines import EngineRegistry
from hearth.server.remote.router import RemoteEngines


def _engine(model: str) -> ThreadingHTTPServer:
    """A real HTTP server on loopback whose /v1/models lists one model."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"object": "list", "data": [{"id": model, "object": "model"}]})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def engines() -> Iterator[tuple[str, str]]:
    first, second = _engine("old-model"), _engine("new-model")
    yield tuple(f"http://127.0.0.1:{s.server_address[1]}" for s in (first, second))  # type: ignore[misc]
    for server in (first, second):
        server.shutdown()
        server.server_close()


def test_an_edited_engine_lists_its_new_models_at_once(
    engines: tuple[str, str], tmp_path: Path
) -> None:
    registry = EngineRegistry(tmp_path / "engines.json")
    registry.add("box", engines[0])

    async def scenario() -> tuple[list[str], list[str]]:
        remote = RemoteEngines(registry)
        try:
            before = [m.id for m in await remote.models()]
            registry.add("box", engines[1], replace_existing=True)  # Settings → Edit
            after = [m.id for m in await remote.models()]  # well within the list's TTL
        finally:
            await remote.close()
        return before, after

    before, after = asyncio.run(scenario())
    assert before == ["old-model"]
    assert after == ["new-model"]
