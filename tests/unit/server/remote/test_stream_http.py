"""The gateway's streaming HTTP client against real sockets on 127.0.0.1: a scripted
server writes the bytes an engine would (chunked SSE, bodies that end at close, stalls),
so each case is exactly the wire the client must handle."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import httpx
import pytest

from hearth.server.remote.httpx_stream import httpx_post, uses_proxy
from hearth.server.remote.stream_http import (
    ConnectFailedError,
    ReadTimeoutError,
    StreamHttpError,
    StreamingClient,
    read_limited,
)

Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length"))  # fmt: skip
    return head + await reader.readexactly(length)


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class Engine:
    """A loopback server running ``script`` per connection; counts connections."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections = 0
        self.requests: list[bytes] = []
        self.closed_by_client = asyncio.Event()
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> str:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            try:
                await self.script(reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError):
                self.closed_by_client.set()
            finally:
                writer.close()

        self.server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/prefix"

    async def __aexit__(self, *_: object) -> None:
        assert self.server is not None
        self.server.close()


def client(url: str, read_timeout: float = 5.0) -> StreamingClient:
    return StreamingClient(url, {"Authorization": "Bearer k"}, connect_timeout=2.0,
                           read_timeout=read_timeout)  # fmt: skip


def test_a_chunked_stream_arrives_whole_and_the_connection_is_reused() -> None:
    async def scenario() -> None:
        engine: Engine

        async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while True:
                try:
                    engine.requests.append(await read_request(reader))
                except asyncio.IncompleteReadError:
                    return
                writer.write(HEAD + b"Transfer-Encoding: chunked\r\n\r\n")
                euro = "data: \u20ac\n\n".encode()
                for part in (euro[:7], euro[7:], b"data: [DONE]\n\n"):  # a char split
                    writer.write(chunk(part))
                    await writer.drain()
                    await asyncio.sleep(0.01)
                writer.write(b"0\r\n\r\n")
                await writer.drain()

        engine = Engine(script)
        async with engine as url:
            http = client(url)
            for _ in range(2):
                response = await http.post("/v1/x", b'{"a": 1}', "application/json")
                assert response.status_code == 200
                assert response.headers["content-type"] == "text/event-stream"
                body = b"".join([data async for data in response.chunks()])
                assert body.decode() == "data: \u20ac\n\ndata: [DONE]\n\n"
                await response.aclose()
            await http.aclose()
        assert engine.connections == 1  # kept alive and reused
        first = engine.requests[0]
        assert first.startswith(b"POST /prefix/v1/x HTTP/1.1\r\n")
        assert b"Authorization: Bearer k\r\n" in first and first.endswith(b'{"a": 1}')

    asyncio.run(scenario())


def test_a_kept_alive_connection_the_engine_closed_is_replaced() -> None:
    async def scenario() -> None:
        async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await read_request(reader)
            writer.write(HEAD + b"Content-Length: 2\r\n\r\nok")
            await writer.drain()  # then closes, as an engine's idle timeout does

        engine = Engine(script)
        async with engine as url:
            http = client(url)
            for _ in range(3):
                response = await http.post("/x", b"{}", "application/json")
                assert await read_limited(response, 100) == b"ok"
            await http.aclose()
        assert engine.connections == 3

    asyncio.run(scenario())


def test_a_body_without_a_length_ends_when_the_connection_does() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(HEAD + b'\r\n{"done": true}\n')
        await writer.drain()

    async def scenario() -> bytes:
        async with Engine(script) as url:
            response = await client(url).post("/x", b"{}", "application/json")
            return b"".join([data async for data in response.chunks()])

    assert asyncio.run(scenario()) == b'{"done": true}\n'


def test_a_stalled_engine_is_a_read_timeout_and_a_cut_stream_an_error() -> None:
    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + chunk(b"data: 1\n\n"))
        await writer.drain()
        await asyncio.sleep(5)

    async def cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + chunk(b"data: 1\n\n"))
        await writer.drain()

    async def read_all(script: Script) -> list[bytes]:
        got: list[bytes] = []
        async with Engine(script) as url:
            response = await client(url, read_timeout=0.3).post("/x", b"{}", "text/plain")
            async for data in response.chunks():
                got.append(data)
        return got

    with pytest.raises(ReadTimeoutError):
        asyncio.run(read_all(stall))
    with pytest.raises(StreamHttpError, match="closed"):
        asyncio.run(read_all(cut))


def test_closing_a_response_midway_closes_the_connection() -> None:
    async def scenario() -> Engine:
        async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await read_request(reader)
            writer.write(HEAD + b"Transfer-Encoding: chunked\r\n\r\n")
            while True:  # an endless generation; it ends when the client goes away
                writer.write(chunk(b"data: 1\n\n"))
                await writer.drain()
                await asyncio.sleep(0.01)

        engine = Engine(script)
        async with engine as url:
            http = client(url)
            response = await http.post("/x", b"{}", "application/json")
            async for _ in response.chunks():
                break
            await response.aclose()
            await asyncio.wait_for(engine.closed_by_client.wait(), 5)
            await http.aclose()
        return engine

    assert asyncio.run(scenario()).closed_by_client.is_set()


def test_nothing_listening_is_a_connect_failure() -> None:
    async def scenario() -> None:
        server = await asyncio.start_server(lambda *_: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        await client(f"http://127.0.0.1:{port}").post("/x", b"{}", "application/json")

    with pytest.raises(ConnectFailedError):
        asyncio.run(scenario())


def test_behind_a_proxy_httpx_carries_the_stream_in_the_same_shape(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert uses_proxy("http://10.0.0.5:8000")
    monkeypatch.setenv("NO_PROXY", "10.0.0.5")
    assert not uses_proxy("http://10.0.0.5:8000")
    monkeypatch.delenv("HTTP_PROXY")
    monkeypatch.delenv("http_proxy", raising=False)
    assert not uses_proxy("http://10.0.0.6:8000")

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(HEAD + b"Transfer-Encoding: chunked\r\nRetry-After: 3\r\n\r\n")
        writer.write(chunk(b"data: 1\n\n") + b"0\r\n\r\n")
        await writer.drain()

    async def scenario() -> tuple[int, str, bytes]:
        async with Engine(script) as url, httpx.AsyncClient(base_url=url) as http:
            response = await httpx_post(http, "/x", b"{}", "application/json")
            body = b"".join([data async for data in response.chunks()])
            await response.release()
            return response.status_code, response.headers["retry-after"], body

    assert asyncio.run(scenario()) == (200, "3", b"data: 1\n\n")


def test_a_header_value_with_a_line_break_is_left_to_httpx_to_refuse() -> None:
    assert StreamingClient.can_send({"Authorization": "Bearer sk-1"})
    assert not StreamingClient.can_send({"Authorization": "Bearer sk-1\r\nX-Evil: 1"})
