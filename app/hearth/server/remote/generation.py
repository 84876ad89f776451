"""A generation streaming from a remote engine, read as the local engine's are.

The engine's bytes are split into lines (``LineSplitter``), decoded by its dialect
(``openai_wire.SseDecoder``, ``ollama_wire.NdjsonDecoder``), joined per network read
(``coalesce``) and turned into the pipeline's plain events, so every dialect reads a
remote reply through the same ``Generation`` interface (server/generation.py). A reply
ends only at the engine's last line; a stream that breaks or closes before it ends
with a ``Failed`` event naming the engine, never a normal end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol

from hearth.core.errors import HearthError
from hearth.core.generation import (
    Failed,
    Finished,
    FinishReason,
    ReasoningDelta,
    TextDelta,
    Timings,
    ToolCall,
    ToolCallsMade,
    Usage,
)
from hearth.core.model_info import ModelInfo
from hearth.server.generation import Generation, PipelineEvent, Result
from hearth.server.remote.errors import RemoteEngineError
from hearth.server.remote.stream_http import Streamed, StreamHttpError
from hearth.server.remote.wire import StreamEnd, StreamError, WireEvent

log = logging.getLogger(__name__)

_DISCONNECT_POLL_S = 0.25


class Decoder(Protocol):
    ended: bool  # the engine's last line came: only then did the reply end
    terminator: str  # that line, for the error that says it never came

    def feed(self, line: bytes) -> list[WireEvent]: ...


class EngineLink(Protocol):
    """What a remote generation needs of its engine's backend (``RemoteBackend``): the
    name its errors carry, and the observer (the request log) it reports its end to."""

    @property
    def name(self) -> str: ...
    def failed(self, request_id: str, model: str, error: HearthError) -> HearthError: ...
    def observe(self, request_id: str, model: str, finished: Finished) -> None: ...


class RemoteGeneration(Generation):
    """A generation streaming from a remote engine, with the local one's interface.

    The base class wraps the local engine's stream; every method that touches it is
    overridden here, so the base constructor (which needs that stream) is not called.
    """

    def __init__(
        self,
        backend: EngineLink,
        response: Streamed,
        decoder: Decoder,
        *,
        info: ModelInfo,
        request_id: str,
        started: float,
    ) -> None:
        self.info = info
        self.tool_format = None
        self.request_id = request_id
        self.prompt_tokens = 0  # the engine reports it only at the end
        self._backend = backend
        self._response = response
        self._decoder = decoder
        self._started = started
        self._first_token: float | None = None
        self._closing: asyncio.Task[None] | None = None

    async def events(self) -> AsyncIterator[PipelineEvent]:
        """Text, then any tool calls, then ``Finished``, or ``Failed`` naming the engine."""
        try:
            async for event in self._wire_events():
                if isinstance(event, TextDelta | ReasoningDelta) and self._first_token is None:
                    self._first_token = time.perf_counter()
                yield event
                if isinstance(event, Finished | Failed):
                    return
        finally:
            if self._decoder.ended:  # the engine is done: keep the connection for reuse
                await self._response.release()
            else:
                await self._response.aclose()

    async def collect(self, is_disconnected: Callable[[], Awaitable[bool]]) -> Result:
        parts: list[str] = []
        thoughts: list[str] = []
        calls: tuple[ToolCall, ...] = ()

        async def consume() -> Finished:
            nonlocal calls
            async for event in self.events():
                if isinstance(event, TextDelta):
                    parts.append(event.text)
                elif isinstance(event, ReasoningDelta):
                    thoughts.append(event.text)
                elif isinstance(event, ToolCallsMade):
                    calls = event.calls
                elif isinstance(event, Failed):
                    raise event.error
                else:
                    return event
            raise RemoteEngineError(self._backend.name, "the stream ended without a reply")

        task = asyncio.ensure_future(consume())
        try:
            while not (await asyncio.wait({task}, timeout=_DISCONNECT_POLL_S))[0]:
                if await is_disconnected():
                    log.info("client disconnected; closing remote stream %s", self.request_id)
                    task.cancel()
        finally:
            if not task.done():
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({task})
        if task.cancelled():  # the client went away: nobody reads this reply
            cancelled = Finished(FinishReason.CANCELLED, Usage(0, 0), request_id=self.request_id)
            return Result("".join(parts), calls, cancelled)
        finished = task.result()
        return Result("".join(parts), calls, finished, reasoning="".join(thoughts))

    def cancel(self) -> None:
        """Close the connection: the engine stops generating (within its next step)."""
        if self._response.is_closed or self._closing is not None:
            return
        self._closing = asyncio.get_running_loop().create_task(self._response.aclose())

    async def _wire_events(self) -> AsyncIterator[PipelineEvent]:
        """The engine's events, a network read at a time (see :func:`coalesce`), its
        lines split and parsed as bytes (JSON reads UTF-8 itself)."""
        lines = LineSplitter()
        decoder = self._decoder
        try:
            async for data in self._response.chunks():
                batch: list[WireEvent] = []
                for line in lines.feed(data):
                    if not line:  # SSE's separators
                        continue
                    batch += decoder.feed(line)
                    if decoder.ended:
                        break
                for event in coalesce(batch) if len(batch) > 1 else batch:
                    converted = self._convert(event)
                    if converted is not None:
                        yield converted
                if decoder.ended:
                    return
            tail = [e for line in lines.close() for e in decoder.feed(line)]
            for event in coalesce(tail):
                converted = self._convert(event)
                if converted is not None:
                    yield converted
        except StreamHttpError as exc:
            log.warning("stream from engine %s broke: %s", self._backend.name, exc)
            yield self._failure(f"the stream broke off halfway ({exc}).")
            return
        if not decoder.ended:  # closed cleanly, but before its last line: cut off
            log.warning("stream from engine %s closed without %s", self._backend.name,
                        decoder.terminator)  # fmt: skip
            yield self._failure(
                f"the stream closed before its last line ({decoder.terminator}); "
                "the reply is cut short."
            )

    def _convert(self, event: WireEvent) -> PipelineEvent | None:
        if isinstance(event, StreamError):
            return self._failure(event.message)
        if isinstance(event, StreamEnd):
            finished = self._finished(event)
            self.prompt_tokens = event.prompt_tokens
            self._backend.observe(self.request_id, self.info.id, finished)
            return finished
        if isinstance(event, TextDelta | ReasoningDelta) and not event.text:
            return None
        return event

    def _failure(self, message: str) -> Failed:
        error = RemoteEngineError(self._backend.name, message)
        return Failed(self._backend.failed(self.request_id, self.info.id, error))

    def _finished(self, end: StreamEnd) -> Finished:
        """Time to first token as measured at Hearth (what this endpoint's user sees);
        the decode rate as the engine measured it where it says (text held back, such
        as a tool call's, reaches Hearth in one burst), else as seen here."""
        now = time.perf_counter()
        first = self._first_token or now
        decode_s = max(now - first, 1e-9)
        rate = end.decode_tokens_per_s
        if rate is None:
            rate = (end.completion_tokens - 1) / decode_s if end.completion_tokens > 1 else 0.0
        ttft_ms = (first - self._started) * 1000.0
        timings = Timings(0.0, ttft_ms, ttft_ms, decode_s * 1000.0, rate)
        usage = Usage(end.prompt_tokens, end.completion_tokens, end.cached_tokens)
        reason = end.reason if end.reason is not FinishReason.ERROR else FinishReason.STOP
        return Finished(reason, usage, timings, None, self.request_id, end.stop_sequence)


class LineSplitter:
    """Lines out of a byte stream, keeping each read's lines together (``\\r\\n`` too).

    Bytes, not text: a newline byte never sits inside a UTF-8 sequence, so a character
    split across reads is whole again in its line, and no decoding pass is needed.
    """

    def __init__(self) -> None:
        self._rest = b""

    def feed(self, data: bytes) -> list[bytes]:
        *lines, self._rest = (self._rest + data if self._rest else data).split(b"\n")
        return [line[:-1] if line.endswith(b"\r") else line for line in lines]

    def close(self) -> list[bytes]:
        rest, self._rest = self._rest.removesuffix(b"\r"), b""
        return [rest] if rest else []


def coalesce(events: list[WireEvent]) -> list[WireEvent]:
    """Join the text (and the reasoning) of one network read into one delta.

    When Hearth keeps up, a read holds one token and nothing changes. When it falls
    behind (many streams, a fast engine), the tokens that queued up meanwhile leave as
    one chunk: the client gets the same text, and Hearth's cost per token stops
    growing with the engine's speed.
    """
    out: list[WireEvent] = []
    for event in events:
        last = out[-1] if out else None
        if isinstance(event, TextDelta) and isinstance(last, TextDelta):
            out[-1] = TextDelta(last.text + event.text)
        elif isinstance(event, ReasoningDelta) and isinstance(last, ReasoningDelta):
            out[-1] = ReasoningDelta(last.text + event.text)
        else:
            out.append(event)
    return out
