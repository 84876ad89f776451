"""The live request log: every recent HTTP request with its status, for the Server panel.

The engine only knows about generations that ran; a person watching the endpoint also
needs to see the requests that never got that far (a wrong key, an unknown model, a
prompt that is too long), so the log is kept at the HTTP layer as plain ASGI middleware
(streaming passes through untouched). It records method, path (never the query string),
status and duration; never headers, keys or bodies. A generation route's entry is
joined with the engine's finished event for that generation (tokens, TTFT, tok/s).

The join is by request id: this middleware gives every request its id (also sent back
as ``X-Request-Id``); the route passes it to the engine's job, the job's finished event
carries it back, and the generation pipeline notes that event here under the id before
the route sends its last byte.
"""

from __future__ import annotations

import collections
import itertools
import logging
import time
from dataclasses import dataclass

from pydantic import BaseModel
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hearth.core.generation import Finished
from hearth.server import request_ids

log = logging.getLogger(__name__)

MAX_ENTRIES = 500
# Polled by the GUI (or monitoring) every second or so: logged only when they fail.
QUIET_PATHS = frozenset(
    {"/health", "/hearth/v1/status", "/hearth/v1/requests", "/hearth/v1/events"}
)
CLIENT_CLOSED = 499  # nginx's "client closed request": no response was ever started


@dataclass(frozen=True)
class LoggedRequest:
    """One HTTP request as the log keeps it (no headers, query string or body)."""

    id: int
    started_at: float  # time.time()
    finished_at: float
    method: str
    path: str
    status: int
    duration_ms: float
    client: str | None
    model: str | None
    generation: Finished | None
    request_id: str = ""
    engine: str | None = None  # "local", or the remote engine that served it


class RequestLogEntry(BaseModel):
    """The wire form of one entry; the token fields are null unless it generated."""

    id: int
    request_id: str
    started_at: float
    finished_at: float
    method: str
    path: str
    status: int
    duration_ms: float
    client: str | None
    model: str | None
    engine: str | None
    finish_reason: str | None
    error: str | None  # why a generation failed (a remote engine's failures name it)
    prompt_tokens: int | None
    cached_tokens: int | None
    cache_disk_tokens: int | None  # of cached_tokens, restored from the prompt cache on disk
    completion_tokens: int | None
    ttft_ms: float | None
    decode_tokens_per_s: float | None
    image_ms: float | None = None  # the vision encoder's time on the request's images
    image_tokens: int | None = None  # image embeddings it encoded (cached ones not)

    @classmethod
    def of(cls, entry: LoggedRequest) -> RequestLogEntry:
        gen = entry.generation
        timings = gen.timings if gen else None
        return cls(
            id=entry.id,
            request_id=entry.request_id,
            started_at=entry.started_at,
            finished_at=entry.finished_at,
            method=entry.method,
            path=entry.path,
            status=entry.status,
            duration_ms=round(entry.duration_ms, 2),
            client=entry.client,
            model=entry.model,
            engine=entry.engine,
            finish_reason=gen.reason.value if gen else None,
            error=gen.error if gen else None,
            prompt_tokens=gen.usage.prompt_tokens if gen else None,
            cached_tokens=gen.usage.cached_tokens if gen else None,
            cache_disk_tokens=timings.cache_disk_tokens if timings else None,
            completion_tokens=gen.usage.completion_tokens if gen else None,
            ttft_ms=round(timings.ttft_ms, 2) if timings else None,
            decode_tokens_per_s=round(timings.decode_tokens_per_s, 2) if timings else None,
            image_ms=round(timings.image_ms, 2) if timings else None,
            image_tokens=timings.image_tokens if timings else None,
        )


class RequestLogResponse(BaseModel):
    """``GET /hearth/v1/requests``: the loaded model and recent requests, newest first."""

    model: str | None
    requests: list[RequestLogEntry]


class RequestLog:
    """A bounded, in-memory list of recent requests. Used only on the event loop."""

    def __init__(self, *, max_entries: int = MAX_ENTRIES) -> None:
        self._entries: collections.deque[LoggedRequest] = collections.deque(maxlen=max_entries)
        # Finished generations by request id, until their request's entry is written.
        self._generations: collections.OrderedDict[str, tuple[str, Finished, str]] = (
            collections.OrderedDict()
        )
        self._ids = itertools.count(1)

    def next_id(self) -> int:
        return next(self._ids)

    def add(self, entry: LoggedRequest) -> None:
        self._entries.append(entry)

    def recent(self, limit: int = 50) -> list[LoggedRequest]:
        """Newest first."""
        return list(itertools.islice(reversed(self._entries), max(0, limit)))

    def note_generation(
        self, request_id: str, model: str, finished: Finished, engine: str | None = None
    ) -> None:
        """Keep a request's finished generation (and the engine that ran it: a remote
        engine's name, or local) until its entry is written."""
        self._generations[request_id] = (model, finished, engine or "local")
        while len(self._generations) > MAX_ENTRIES:  # entries whose response never ended
            self._generations.popitem(last=False)

    def claim_generation(self, request_id: str) -> tuple[str, Finished, str] | None:
        """The model, finished event and engine of this request's generation, if any."""
        return self._generations.pop(request_id, None)


class RequestLogMiddleware:
    """Records each HTTP request in ``request_log`` once its response is complete.

    The entry is written just before the last body message goes out, so a client that
    asks for the log right after its response always finds its own request there.
    Register it outermost, so that rejections by the access checks are logged too.
    """

    def __init__(self, app: ASGIApp, request_log: RequestLog) -> None:
        self.app = app
        self.log = request_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started_wall, started = time.time(), time.perf_counter()
        request_id = request_ids.assign(scope)
        status: int | None = None
        recorded = False

        def record(final_status: int) -> None:
            nonlocal recorded
            recorded = True
            try:
                self._record(scope, request_id, final_status, started_wall, started)
            except Exception:  # the log must never break a response
                log.exception("could not record a request in the request log")

        async def send_logged(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = list(message.get("headers", []))
                headers.append((request_ids.HEADER, request_id.encode()))
                message = {**message, "headers": headers}
            elif (
                message["type"] == "http.response.body"
                and not message.get("more_body", False)
                and not recorded
            ):
                record(status if status is not None else 500)
            await send(message)

        try:
            await self.app(scope, receive, send_logged)
        except BaseException:
            if not recorded:
                # An exception before the response started becomes a 500 further out;
                # a cancelled or broken stream keeps the status it had already sent.
                record(status if status is not None else 500)
            raise
        if not recorded:
            record(status if status is not None else CLIENT_CLOSED)

    def _record(
        self, scope: Scope, request_id: str, status: int, started_wall: float, started: float
    ) -> None:
        path = str(scope.get("path", ""))
        claimed = self.log.claim_generation(request_id)
        if path in QUIET_PATHS and status < 400:
            return
        ended_wall = time.time()
        model, generation, engine = claimed if claimed is not None else (None, None, None)
        client = scope.get("client")
        self.log.add(
            LoggedRequest(
                id=self.log.next_id(),
                started_at=started_wall,
                finished_at=ended_wall,
                method=str(scope.get("method", "")),
                path=path,
                status=status,
                duration_ms=(time.perf_counter() - started) * 1000.0,
                client=str(client[0]) if client else None,
                model=model,
                generation=generation,
                request_id=request_id,
                engine=engine,
            )
        )
