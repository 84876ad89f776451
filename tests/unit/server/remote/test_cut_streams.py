"""A remote engine's stream cut short, against a real socket on 127.0.0.1 (issue 21).

A scripted engine answers 200 and sends part of a reply (for OpenAI, up to its finish
reason: what an engine killed between its last token and ``[DONE]`` leaves), then stops
before the line that ends it (``data: [DONE]``, Ollama's ``"done": true``) in each way
a stream can stop: the connection closes in the middle of a chunked body, the chunked
body is ended properly but without that line, or a body that runs until the connection
closes is closed cleanly (the last two look like a normal end to HTTP). Each must end
as an error naming the engine, never as a finished reply, both through the lean client
and through httpx (an engine behind a proxy: the scripted engine is the proxy).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from hearth.config.engines import EngineKind, EngineSpec
from hearth.core.generation import ChatMessage, Failed, Finished, FinishReason, TextDelta
from hearth.core.sampling import SamplingParams
from hearth.server.generation import PipelineEvent
from hearth.server.pipeline import ChatPrompt, PipelineRequest
from hearth.server.remote.backend import RemoteBackend
from hearth.server.remote.errors import RemoteEngineError

ENGINE = "edge"
OK = b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\n"


def openai_lines() -> list[bytes]:
    """An OpenAI stream up to its finish reason: all but the usage chunk and [DONE]."""
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}}]},
        {"choices": [{"index": 0, "delta": {"content": "lo"}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    return [f"data: {json.dumps(c)}\n\n".encode() for c in chunks]


def ollama_lines() -> list[bytes]:
    """An Ollama stream without its last (``"done": true``) line."""
    chunks = [
        {"model": "m", "message": {"role": "assistant", "content": "Hel"}, "done": False},
        {"model": "m", "message": {"role": "assistant", "content": "lo"}, "done": False},
    ]
    return [(json.dumps(c) + "\n").encode() for c in chunks]


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


Writer = Callable[[asyncio.StreamWriter, list[bytes], bytes], Awaitable[None]]


async def closed_mid_body(writer: asyncio.StreamWriter, lines: list[bytes], kind: bytes) -> None:
    writer.write(OK % kind + b"Transfer-Encoding: chunked\r\n\r\n")
    for line in lines:
        writer.write(chunk(line))
    await writer.drain()  # then the connection closes: no zero-size last chunk


async def body_ended_early(writer: asyncio.StreamWriter, lines: list[bytes], kind: bytes) -> None:
    writer.write(OK % kind + b"Transfer-Encoding: chunked\r\n\r\n")
    for line in lines:
        writer.write(chunk(line))
    writer.write(b"0\r\n\r\n")  # a whole HTTP body, whose last line never came
    await writer.drain()


async def closed_cleanly(writer: asyncio.StreamWriter, lines: list[bytes], kind: bytes) -> None:
    writer.write(OK % kind + b"Connection: close\r\n\r\n")  # the body runs until close
    writer.writelines(lines)
    await writer.drain()


CUTS: dict[str, Writer] = {
    "closed mid-body": closed_mid_body,
    "chunked body ended early": body_ended_early,
    "closed cleanly": closed_cleanly,
}


@asynccontextmanager
async def scripted_engine(write: Writer, lines: list[bytes], kind: bytes) -> AsyncIterator[str]:
    """A server on 127.0.0.1 that reads one request per connection and answers with
    ``write``, then closes; yields its URL."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length"))  # fmt: skip
            await reader.readexactly(length)
            await write(writer, lines, kind)
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


class Observed:
    """The observer the request log is: what it was told, with the engine's name."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Finished, str | None]] = []

    def __call__(
        self, request_id: str, model: str, finished: Finished, engine: str | None = None
    ) -> None:
        self.calls.append((request_id, finished, engine))


def request() -> PipelineRequest:
    prompt = ChatPrompt((ChatMessage("user", "Hello"),))
    return PipelineRequest(f"{ENGINE}/m", prompt, SamplingParams(temperature=0.0), request_id="r1")


async def run_cut(
    url: str, kind: EngineKind, observed: Observed, *, whole: bool
) -> list[PipelineEvent] | BaseException:
    """The events the pipeline gets (or, for a whole reply, what collect raises)."""
    backend = RemoteBackend(EngineSpec(ENGINE, url, kind), None, connect_timeout=2.0,
                            read_timeout=10.0, observer=observed)  # fmt: skip
    try:
        generation = await backend.start(request(), backend.model_info("m"), "m")

        async def disconnected() -> bool:
            return False

        if whole:
            try:
                await generation.collect(disconnected)
            except RemoteEngineError as exc:
                return exc
            raise AssertionError("a reply that was cut off was collected as whole")
        return [event async for event in generation.events()]
    finally:
        await backend.aclose()


WIRES = {EngineKind.OPENAI: (openai_lines, b"text/event-stream"),
         EngineKind.OLLAMA: (ollama_lines, b"application/x-ndjson")}  # fmt: skip


@pytest.mark.parametrize("path", ["lean", "proxy"])
@pytest.mark.parametrize("cut", list(CUTS))
@pytest.mark.parametrize("kind", [EngineKind.OPENAI, EngineKind.OLLAMA], ids=["openai", "ollama"])
def test_a_stream_without_its_last_line_ends_as_an_error_naming_the_engine(
    kind: EngineKind, cut: str, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines, content_type = WIRES[kind]
    observed = Observed()

    async def scenario() -> list[PipelineEvent] | BaseException:
        async with scripted_engine(CUTS[cut], lines(), content_type) as served:
            url = served
            if path == "proxy":  # httpx carries it: the scripted engine is the proxy
                for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
                    monkeypatch.delenv(name, raising=False)
                monkeypatch.setenv("HTTP_PROXY", served)
                url = "http://engine.invalid:8000"
            return await run_cut(url, kind, observed, whole=False)

    events = asyncio.run(scenario())
    assert isinstance(events, list)
    assert [e for e in events if isinstance(e, TextDelta)]  # part of the reply came
    assert not [e for e in events if isinstance(e, Finished)]  # and no normal end
    last = events[-1]
    assert isinstance(last, Failed) and isinstance(last.error, RemoteEngineError)
    assert last.error.engine == ENGINE and f"'{ENGINE}'" in last.error.message
    ((request_id, finished, engine),) = observed.calls  # the request log's note
    assert (request_id, engine, finished.reason) == ("r1", ENGINE, FinishReason.ERROR)
    assert finished.error == last.error.message


@pytest.mark.parametrize("kind", [EngineKind.OPENAI, EngineKind.OLLAMA], ids=["openai", "ollama"])
def test_a_whole_reply_cut_short_is_a_remote_engine_error(kind: EngineKind) -> None:
    lines, content_type = WIRES[kind]
    observed = Observed()

    async def scenario() -> list[PipelineEvent] | BaseException:
        async with scripted_engine(body_ended_early, lines(), content_type) as url:
            return await run_cut(url, kind, observed, whole=True)

    error = asyncio.run(scenario())
    assert isinstance(error, RemoteEngineError) and error.engine == ENGINE
    assert "cut short" in error.message
    assert [(engine, f.reason) for _, f, engine in observed.calls] == [(ENGINE, FinishReason.ERROR)]
