"""The request-log middleware's edge cases, on a plain ASGI app (no model needed):
a crash is a 500, a request that never got a response is a 499, quiet paths only
show when they fail, the log is bounded, and a generation is joined to its request by
the request's id (given here and sent back as X-Request-Id)."""

from __future__ import annotations

import asyncio

from starlette.types import Message, Receive, Scope, Send

from hearth.core.generation import Finished, FinishReason, Usage
from hearth.server import request_ids
from hearth.server.request_log import CLIENT_CLOSED, RequestLog, RequestLogMiddleware


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    path = scope["path"]
    if path.startswith("/generate/"):  # as the pipeline does, under the request's id
        tokens = int(path.rsplit("/", 1)[1])
        finished = Finished(FinishReason.STOP, Usage(5, tokens))
        scope["test.log"].note_generation(request_ids.assign(scope), "tiny", finished)
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
        self.log = RequestLog(max_entries=max_entries)
        self.asgi = RequestLogMiddleware(app, self.log)

    async def call(self, method: str, target: str) -> int | None:
        path, _, query = target.partition("?")
        scope = {"type": "http", "method": method, "path": path, "headers": [],
                 "query_string": query.encode(), "client": ("127.0.0.1", 5000),
                 "test.log": self.log}  # fmt: skip
        sent: list[Message] = []
        self.sent = sent

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


def test_generations_join_their_own_request_by_id() -> None:
    client = Client()
    unanswered = Finished(FinishReason.STOP, Usage(1, 1))
    client.log.note_generation("req_never_answered", "tiny", unanswered)

    async def run() -> list[str]:
        ids = []
        for tokens in (3, 7):
            assert await client.call("POST", f"/generate/{tokens}") == 200
            headers = dict(client.sent[0]["headers"])
            ids.append(headers[request_ids.HEADER].decode())
        assert await client.call("GET", "/v1/models") == 200
        return ids

    ids = asyncio.run(run())
    plain, second, first = client.log.recent(3)
    assert [first.request_id, second.request_id] == ids and ids[0] != ids[1]
    assert first.generation is not None and first.generation.usage.completion_tokens == 3
    assert second.generation is not None and second.generation.usage.completion_tokens == 7
    assert (first.model, plain.generation, plain.model) == ("tiny", None, None)
    assert plain.request_id.startswith("req_") and plain.request_id not in ids
    assert client.log.claim_generation("req_never_answered") is not None  # kept until claimed
