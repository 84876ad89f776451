"""One remote engine as a backend of the pipeline: a request goes out over HTTP and its
stream comes back as the same plain events the local engine yields.

Every request is streamed from the engine, even when the client asked for one JSON
reply: one decoding path, and a client that goes away frees the engine's slot at once
(closing the connection is how OpenAI-compatible servers and Ollama learn of it).
Failures name the engine: it is down or answers 5xx (502), it is busy (503 with its
Retry-After), it does not have the model (404), it refuses the request (400), its
stream breaks halfway or closes without its last line (``[DONE]``, ``"done": true``):
an error event, or a 502 for a client waiting on one reply, never a normal end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Protocol

import httpx

from hearth.config.engines import EngineKind, EngineSpec
from hearth.core.errors import HearthError, InvalidRequestError, ModelNotFoundError
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
from hearth.server.pipeline import Generation, PipelineEvent, PipelineRequest, Result
from hearth.server.remote import ollama_wire, openai_wire
from hearth.server.remote.errors import RemoteEngineBusyError, RemoteEngineError
from hearth.server.remote.httpx_stream import httpx_post, uses_proxy
from hearth.server.remote.probe import auth_headers
from hearth.server.remote.stream_http import (
    ConnectFailedError,
    ConnectTimeoutError,
    Streamed,
    StreamHttpError,
    StreamingClient,
    read_limited,
)
from hearth.server.remote.wire import StreamEnd, StreamError, WireEvent

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 300.0  # between chunks: a big model's prefill can take minutes
_ERROR_BODY_LIMIT = 64 * 1024
_DISCONNECT_POLL_S = 0.25
_JSON = "application/json"


class Decoder(Protocol):
    ended: bool  # the engine's last line came: only then did the reply end
    terminator: str  # that line, for the error that says it never came

    def feed(self, line: bytes) -> list[WireEvent]: ...


class EngineObserver(Protocol):
    """Told when a remote generation ends (the request log, with the engine's name)."""

    def __call__(
        self, request_id: str, model: str, finished: Finished, engine: str | None = None
    ) -> None: ...


class RemoteBackend:
    """One engine: pooled HTTP clients carrying its key, and the dialect it speaks.

    Generations stream through :class:`StreamingClient` (the hot path; httpx when a
    proxy applies); model lists and probes go through ``client`` (httpx).
    """

    def __init__(
        self,
        spec: EngineSpec,
        api_key: str | None,
        *,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        read_timeout: float = READ_TIMEOUT_S,
        observer: EngineObserver | None = None,
    ) -> None:
        self.spec = spec
        self._observer = observer
        self.client = httpx.AsyncClient(
            base_url=spec.url,
            headers=auth_headers(api_key),  # the key goes only to this engine's URL
            timeout=httpx.Timeout(read_timeout, connect=connect_timeout),
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
        )
        self._streams: StreamingClient | None = None
        headers = auth_headers(api_key)
        if not uses_proxy(spec.url) and StreamingClient.can_send(headers):
            self._streams = StreamingClient(spec.url, headers, connect_timeout=connect_timeout,
                                            read_timeout=read_timeout)  # fmt: skip

    @property
    def name(self) -> str:
        return self.spec.name

    def model_info(self, model: str, context_length: int | None = None) -> ModelInfo:
        """What the dialect encoders may say about a remote model."""
        namespaced = f"{self.name}/{model}"
        return ModelInfo(
            id=namespaced, path=Path(namespaced), architecture="remote", n_params=0,
            size_bytes=0, quantization="", n_ctx_train=context_length or 0,
            n_ctx_per_slot=context_length or 0, n_slots=0, n_vocab=0, chat_template=None,
            has_fim=False, created=int(self.spec.added),
        )  # fmt: skip

    async def start(self, request: PipelineRequest, info: ModelInfo, model: str) -> Generation:
        """Send ``request`` for ``model`` (its id at the engine); errors before the first
        byte of the stream are raised, as the local engine's are."""
        wire = ollama_wire if self.spec.kind is EngineKind.OLLAMA else openai_wire
        path, body = wire.request_body(request, model)
        decoder: Decoder = (
            ollama_wire.NdjsonDecoder()
            if self.spec.kind is EngineKind.OLLAMA
            else openai_wire.SseDecoder()
        )
        started = time.perf_counter()
        data = json.dumps(body, ensure_ascii=False).encode()
        try:
            if self._streams is not None:
                response: Streamed = await self._streams.post(path, data, _JSON)
            else:
                response = await httpx_post(self.client, path, data, _JSON)
        except StreamHttpError as exc:
            raise self.failed(request.request_id, info.id, self._transport_error(exc)) from None
        if response.status_code >= 400:
            error = await self._status_error(response, model)
            raise self.failed(request.request_id, info.id, error)
        log.debug("request %s streaming from engine %s", request.request_id, self.name)
        return RemoteGeneration(
            self, response, decoder, info=info, request_id=request.request_id, started=started
        )

    def failed(self, request_id: str, model: str, error: HearthError) -> HearthError:
        """``error``, after telling the observer, so the request log names the engine
        of a request that failed as well as of one it served."""
        usage = Usage(0, 0)
        self.observe(request_id, model, Finished(FinishReason.ERROR, usage, error=error.message,
                                                 request_id=request_id))  # fmt: skip
        return error

    def observe(self, request_id: str, model: str, finished: Finished) -> None:
        if self._observer is None:
            return
        try:
            self._observer(request_id, model, finished, engine=self.name)
        except Exception:  # an observer (the request log) must never break a response
            log.exception("generation observer failed")

    async def aclose(self) -> None:
        if self._streams is not None:
            await self._streams.aclose()
        await self.client.aclose()

    def _transport_error(self, exc: StreamHttpError) -> RemoteEngineError:
        if isinstance(exc, ConnectTimeoutError):
            what = f"no connection to {self.spec.url} within the connect timeout"
        elif isinstance(exc, ConnectFailedError):
            what = f"cannot connect to {self.spec.url}; is it running? ({exc})"
        else:
            what = f"the request to {self.spec.url} failed ({exc})"
        return RemoteEngineError(self.name, what)

    async def _status_error(self, response: Streamed, model: str) -> HearthError:
        body = await read_limited(response, _ERROR_BODY_LIMIT)
        status, message = response.status_code, openai_wire.error_message(body)
        if status in (401, 403):
            return RemoteEngineError(
                self.name,
                f"it refused Hearth's key for it (HTTP {status}: {message}). Store the right "
                f"one with 'hearth engines add {self.name} {self.spec.url} --api-key-stdin "
                "--replace'.",
            )
        if status in (429, 503):
            retry = _retry_after(response.headers.get("retry-after"))
            return RemoteEngineBusyError(self.name, message or f"HTTP {status}", retry)
        if status == 404:
            return ModelNotFoundError(
                f"Remote engine '{self.name}' does not serve '{model}' ({message})."
            )
        if 400 <= status < 500:
            return InvalidRequestError(
                f"Remote engine '{self.name}' refused the request: {message}"
            )
        return RemoteEngineError(self.name, f"it answered HTTP {status}: {message}")


class RemoteGeneration(Generation):
    """A generation streaming from a remote engine, with the local one's interface.

    The base class wraps the local engine's stream; every method that touches it is
    overridden here, so the base constructor (which needs that stream) is not called.
    """

    def __init__(
        self,
        backend: RemoteBackend,
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


def _retry_after(value: str | None) -> int:
    try:
        return max(1, int(float(value or "1")))
    except ValueError:
        return 1
