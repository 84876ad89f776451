"""The request-log middleware's edge cases, on a plain ASGI app (no model needed):
a crash is a 500, a request that never got a response is a 499, quiet paths only
show when they fail, the log is bounded, and engine records are joined once each."""

from __future__ import annotations

import asyncio
import time
from typing import cast

from starlette.types import Message, Receive, Scope, Send

from hearth.core.generation import FinishReason, Usage
from hearth.engine.engine import Engine
from hearth.engine.scheduler import CompletedRequest
from hearth.server.request_log import CLIENT_CLOSED, RequestLog, RequestLogMiddleware


class Records:
    """Stands in for the engine's record keeping: only what the log reads."""

    def __init__(self) -> None:
        self.records: list[CompletedRequest] = []
        self.info = None

    def completed_requests(self, limit: int = 50) -> list[CompletedRequest]:
        return list(reversed(self.records))[:limit]


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    path = scope["path"]
    if path == "/boom":
        raise RuntimeError("boom")
    if path == "/silent":
        return  # e.g. the client went away before anything was sent
    status = 503 if path == "/health" and scope["method"] == "POST" else 200
    await send({"type": "http.response.start", "status": status, "headers": []})
    await send({"type": "http.response.body", "body": b"x", "more_body": True})
    await send({"type": "http.response.body", "body": b""})


class Client:
    """Drives the middleware the way an ASGI server would; returns the status sent."""

    def __init__(self, max_entries: int = 500) -> None:
        self.log = RequestLog(cast(Engine, Records()), max_entries=max_entries)
        self.asgi = RequestLogMiddleware(app, self.log)

    async def call(self, method: str, target: str) -> int | None:
        path, _, query = target.partition("?")
        scope = {"type": "http", "method": method, "path": path, "headers": [],
                 "query_string": query.encode(), "client": ("127.0.0.1", 5000)}  # fmt: skip
        sent: list[Message] = []

        async def receive() -> Message:
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            sent.append(message)

        try:
            await self.asgi(scope, receive, send)
        except RuntimeError:
            return 500  # what the server's outermost error handler answers
        return next((int(m["status"]) for m in sent if "status" in m), None)


def test_statuses_paths_and_quiet_routes() -> None:
    client = Client()

    async def run() -> None:
        assert await client.call("GET", "/v1/models?api_key=sk-secret") == 200
        assert await client.call("GET", "/boom") == 500
        assert await client.call("GET", "/silent") is None
        assert await client.call("GET", "/health") == 200  # quiet: succeeded, not logged
        assert await client.call("POST", "/health") == 503  # quiet but failed: logged

    asyncio.run(run())
    entries = client.log.recent(10)
    assert [(e.method, e.path, e.status) for e in entries] == [
        ("POST", "/health", 503),
        ("GET", "/silent", CLIENT_CLOSED),
        ("GET", "/boom", 500),
        ("GET", "/v1/models", 200),  # the query string is never kept
    ]
    assert [e.id for e in entries] == sorted((e.id for e in entries), reverse=True)
    assert all(e.generation is None and e.duration_ms >= 0 for e in entries)
    assert entries[-1].client == "127.0.0.1"


def test_bounded() -> None:
    client = Client(max_entries=3)

    async def run() -> None:
        for i in range(5):
            await client.call("GET", f"/v1/x{i}")

    asyncio.run(run())
    assert [e.path for e in client.log.recent(50)] == ["/v1/x4", "/v1/x3", "/v1/x2"]
    assert [e.path for e in client.log.recent(1)] == ["/v1/x4"]


def test_each_engine_record_is_joined_once() -> None:
    records = Records()
    log = RequestLog(cast(Engine, records))
    now = time.time()
    # The engine records a generation just before its response ends. A ran from now to
    # now+2.05 (record at 2.00), B from now+1 to now+2.02 (record at 2.01): B ends first
    # and takes the record closest to its end; A then gets its own.
    a = CompletedRequest(now + 2.00, FinishReason.STOP, Usage(5, 3), None)
    b = CompletedRequest(now + 2.01, FinishReason.LENGTH, Usage(5, 9), None)
    early = CompletedRequest(now - 1, FinishReason.STOP, Usage(1, 1), None)
    records.records = [early, a, b]
    assert log.claim_generation(now + 1, now + 2.02) is b
    assert log.claim_generation(now, now + 2.05) is a
    assert log.claim_generation(now, now + 5) is None  # each record is joined once
    assert log.claim_generation(now + 10, now + 20) is None  # nothing in the window
