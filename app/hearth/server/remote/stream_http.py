"""A lean HTTP/1.1 client for the one call on the gateway's hot path: a POST whose
response streams back a token at a time.

httpx costs about 200 µs of CPU per streamed chunk (httpcore's h11 parser, an AnyIO
cancel scope per read, two events per chunk), which on a small machine is CPU taken
from the engine the stream comes from. Here a chunk is one ``data_received`` call, fed
to httptools' C parser (uvicorn's own), and one wake-up of the reader. Connections are
kept alive and reused, as httpx's pool does. Everything else (listing models, probes)
still goes through httpx, and so does this call when a proxy applies to the engine's
URL (``HTTP(S)_PROXY``), which this client does not speak (:mod:`.httpx_stream`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from typing import Protocol, cast
from urllib.parse import urlsplit

import httptools
import httpx  # its SSL context only

_IDLE_LIMIT = 64  # kept-alive connections per engine
_PAUSE_ABOVE = 1 << 20  # bytes buffered before the socket stops being read


class StreamHttpError(Exception):
    """The request failed in transport (no HTTP answer, or the body broke off)."""


class ConnectFailedError(StreamHttpError):
    pass


class ConnectTimeoutError(ConnectFailedError):
    pass


class ReadTimeoutError(StreamHttpError):
    pass


class Streamed(Protocol):
    """A response being streamed, from this client or from httpx (behind a proxy)."""

    status_code: int
    headers: dict[str, str]  # names in lower case

    @property
    def is_closed(self) -> bool: ...

    def chunks(self) -> AsyncIterator[bytes]: ...
    async def aclose(self) -> None: ...
    async def release(self) -> None: ...


async def read_limited(response: Streamed, limit: int) -> bytes:
    """At most about ``limit`` bytes of the body (an error's explanation), then closed."""
    body = bytearray()
    with contextlib.suppress(StreamHttpError):
        async for data in response.chunks():
            body += data
            if len(body) > limit:
                break
    await response.aclose()
    return bytes(body)


class StreamingClient:
    """POSTs to one engine (``base_url``, sending ``headers`` with each request)."""

    def __init__(
        self,
        base_url: str,
        headers: dict[str, str],
        *,
        connect_timeout: float,
        read_timeout: float,
    ) -> None:
        parts = urlsplit(base_url)
        self._host = parts.hostname or "127.0.0.1"
        self._tls = parts.scheme == "https"
        self._port = parts.port or (443 if self._tls else 80)
        self._prefix = parts.path.rstrip("/")
        netloc = parts.netloc.rsplit("@", 1)[-1]  # never user:password into Host
        fixed = {"Host": netloc, "Accept": "*/*", "Connection": "keep-alive", **headers}
        self._head = "".join(f"{k}: {v}\r\n" for k, v in fixed.items())
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._idle: list[_Connection] = []
        # httpx's verification (certifi), as for the engine's probes and model lists.
        self._ssl: ssl.SSLContext | None = httpx.create_ssl_context() if self._tls else None

    @staticmethod
    def can_send(headers: dict[str, str]) -> bool:
        """Whether ``headers`` can be written as they are (no line breaks in a value, as
        a mistyped key could hold); httpx refuses those with a clear error instead."""
        return not any("\r" in v or "\n" in v for v in headers.values())

    async def post(self, path: str, body: bytes, content_type: str) -> StreamResponse:
        """Send the request; return once the status and headers are in. A kept-alive
        connection the engine closed just as the request went out (it never answered)
        is replaced by a new one, as httpx's pool does."""
        request = (
            f"POST {self._prefix}{path} HTTP/1.1\r\n{self._head}Content-Type: {content_type}"
            f"\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode("latin-1") + body
        connection = self._take_idle()
        if connection is not None:
            try:
                return await connection.send(request)
            except StreamHttpError:
                connection.close()
                if connection.answered:
                    raise
        return await (await self._connect()).send(request)

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _take_idle(self) -> _Connection | None:
        while self._idle:
            connection = self._idle.pop()
            if connection.reusable():
                return connection
            connection.close()
        return None

    def _release(self, connection: _Connection) -> None:
        if connection.reusable() and len(self._idle) < _IDLE_LIMIT:
            self._idle.append(connection)
        else:
            connection.close()

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        connection = _Connection(self, self._read_timeout)
        try:
            await asyncio.wait_for(
                loop.create_connection(
                    lambda: connection, self._host, self._port, ssl=self._ssl,
                    server_hostname=self._host if self._tls else None,
                ),
                self._connect_timeout,
            )  # fmt: skip
        except TimeoutError:
            raise ConnectTimeoutError("connect timeout") from None
        except (OSError, ssl.SSLError) as exc:
            raise ConnectFailedError(str(exc) or type(exc).__name__) from None
        return connection


class StreamResponse:
    """An answer whose body is read a network read at a time."""

    def __init__(self, connection: _Connection, status_code: int, headers: dict[str, str]) -> None:
        self.status_code = status_code
        self.headers = headers  # names in lower case
        self._connection = connection
        self.is_closed = False

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives (all that is buffered at each wake-up, joined)."""
        connection = self._connection
        while True:
            data = await connection.next_body()
            if data is None:
                return
            yield data

    async def aclose(self) -> None:
        """Give the connection back if the body was read to its end, else close it (an
        engine learns that its client went away from the closed connection)."""
        if not self.is_closed:
            self.is_closed = True
            self._connection.finish(drain=False)

    async def release(self) -> None:
        """Done with a reply that ended (its last event read): the connection goes back
        to the pool once the rest of the body (the chunked terminator) has come in."""
        if not self.is_closed:
            self.is_closed = True
            self._connection.finish(drain=True)


class _Connection(asyncio.Protocol):
    """One TCP (or TLS) connection and the parser of the response it carries."""

    def __init__(self, client: StreamingClient, read_timeout: float) -> None:
        self._client = client
        self._read_timeout = read_timeout
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[None] | None = None
        self._body: list[bytes] = []
        self._buffered = 0
        self._paused = False
        self._headers: dict[str, str] = {}
        self._header_name = ""
        self._headers_done = False
        self._complete = False
        self._keep_alive = False
        self._draining = False
        self._error: StreamHttpError | None = None
        self._closed = False
        self._until_close = False  # a body with no length: it ends when the connection does
        self.answered = False  # some of the response arrived
        self._last_data = 0.0
        self._watchdog: asyncio.TimerHandle | None = None

    # ------------------------------------------------------------------ the request
    async def send(self, request: bytes) -> StreamResponse:
        self._parser = httptools.HttpResponseParser(self)
        self._headers, self._header_name = {}, ""
        self._headers_done = self._complete = self.answered = self._until_close = False
        self._keep_alive = self._draining = False
        transport = self._transport
        if transport is None or transport.is_closing():
            raise StreamHttpError("the connection is closed")
        self._body, self._buffered = [], 0
        loop = asyncio.get_running_loop()
        self._last_data = loop.time()
        self._watchdog = loop.call_later(self._read_timeout, self._check_idle)
        transport.write(request)
        while not self._headers_done:
            await self._wait()
        return StreamResponse(self, self._parser.get_status_code(), self._headers)

    async def next_body(self) -> bytes | None:
        """The body bytes buffered so far (waiting for some), or None at its end."""
        while not self._body:
            if self._complete:
                return None
            await self._wait()
        body = self._body[0] if len(self._body) == 1 else b"".join(self._body)
        self._body.clear()
        self._buffered = 0
        if self._paused and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()
        return body

    async def _wait(self) -> None:
        if self._error is not None:
            raise self._error
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            await waiter
        finally:
            self._waiter = None
        if self._error is not None and not (self._complete or self._body):
            raise self._error

    def reusable(self) -> bool:
        transport = self._transport
        return (
            transport is not None and not transport.is_closing() and self._error is None
            and not self._closed
        )  # fmt: skip

    def finish(self, *, drain: bool) -> None:
        """The response is done with: back to the pool when whole (or, with ``drain``,
        once it is), else closed."""
        if self._complete and self._error is None and self._keep_alive:
            self._stop_watchdog()
            self._client._release(self)
        elif drain and self._headers_done and self._error is None and not self._until_close:
            self._draining = True  # on_message_complete pools it; the watchdog bounds it
            if self._paused and self._transport is not None:
                self._paused = False
                self._transport.resume_reading()
        else:
            self.close()

    def close(self) -> None:
        self._closed = True
        self._stop_watchdog()
        if self._transport is not None:
            self._transport.abort()  # at once: the engine stops generating

    def _stop_watchdog(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None

    def _check_idle(self) -> None:
        loop = asyncio.get_running_loop()
        idle = loop.time() - self._last_data
        if idle < self._read_timeout:
            self._watchdog = loop.call_later(self._read_timeout - idle, self._check_idle)
            return
        self._watchdog = None
        self._fail(ReadTimeoutError(f"no data for {self._read_timeout:g} s"))
        self.close()

    # ------------------------------------------------------------------ asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is no subclass

    def data_received(self, data: bytes) -> None:
        self.answered = True
        self._last_data = asyncio.get_running_loop().time()
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(StreamHttpError(f"malformed HTTP from the engine ({exc})"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._stop_watchdog()
        if self._until_close and exc is None:
            self._complete = True
        elif not self._complete:
            what = str(exc) if exc else "the engine closed the connection"
            self._fail(StreamHttpError(what))
        self._wake()

    # ------------------------------------------------------------------ parser callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_name = name.decode("latin-1").lower()
        self._headers[self._header_name] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self._headers_done = True
        chunked = "chunked" in self._headers.get("transfer-encoding", "")
        self._until_close = not chunked and "content-length" not in self._headers
        self._wake()

    def on_body(self, body: bytes) -> None:
        self._body.append(body)
        self._buffered += len(body)
        if self._buffered > _PAUSE_ABOVE and not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        self._complete = True
        self._keep_alive = self._parser.should_keep_alive()
        self._stop_watchdog()
        if self._draining:
            self._draining = False
            if self._keep_alive and self._error is None:
                self._client._release(self)
            else:
                self.close()
        self._wake()

    def _fail(self, error: StreamHttpError) -> None:
        if self._error is None:
            self._error = error
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
