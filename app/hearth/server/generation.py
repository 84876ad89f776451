"""One running generation under every dialect: its events, its stream, its whole reply.

``Pipeline.start`` (pipeline.py) hands back a ``Generation``; the dialects read it as
plain events (``events``), as their own streamed bytes through a ``StreamEncoder``
(``encode``), or whole (``collect``). Reasoning and tool calls are split out of the
text here, once, with the request's ``ReplyShape``, and an engine failure becomes a
``Failed`` event or an ``EngineFailedError``, so no dialect can read a stream
differently. A remote engine's generation (server/remote/generation.py) keeps this
interface.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Protocol

from hearth.core.errors import EngineFailedError, HearthError
from hearth.core.generation import (
    Failed,
    Finished,
    FinishReason,
    ReasoningDelta,
    TextDelta,
    TokenLogprob,
    ToolCall,
    ToolCallsMade,
)
from hearth.core.model_info import ModelInfo
from hearth.engine.generation_stream import GenerationStream
from hearth.engine.tool_calls import ToolFormat
from hearth.server.reply import ReplyShape

log = logging.getLogger(__name__)

_DISCONNECT_POLL_S = 0.25

PipelineEvent = TextDelta | ReasoningDelta | ToolCallsMade | Finished | Failed
GenerationObserver = Callable[[str, str, Finished], None]
"""Told (request id, model id, finished event) when a generation ends."""


class StreamEncoder(Protocol):
    """A dialect's streamed wire format: the bytes each pipeline event becomes."""

    def opening(self) -> bytes: ...
    def text(self, delta: TextDelta) -> bytes: ...
    def reasoning(self, delta: ReasoningDelta) -> bytes: ...
    def tool_calls(self, calls: tuple[ToolCall, ...]) -> bytes: ...
    def failed(self, error: HearthError) -> bytes: ...
    def finished(self, finished: Finished) -> bytes: ...
    def closing(self) -> bytes: ...


@dataclass(frozen=True)
class Result:
    """A whole reply: its text (reasoning and tool calls taken out), calls, and how it
    ended."""

    text: str
    calls: tuple[ToolCall, ...]
    finished: Finished
    logprobs: tuple[TokenLogprob, ...] = ()
    reasoning: str = ""


class Generation:
    """One running request: iterate ``events()`` to stream it, or ``collect`` it whole."""

    def __init__(
        self,
        stream: GenerationStream,
        info: ModelInfo,
        tool_format: ToolFormat | None,
        request_id: str,
        observer: GenerationObserver | None,
        *,
        shape: ReplyShape | None = None,
    ) -> None:
        self.info = info
        self.tool_format = tool_format
        self.shape = shape or ReplyShape(tool_format=tool_format)
        self.request_id = request_id
        self.prompt_tokens = stream.prompt_tokens
        self._stream = stream
        self._observer = observer

    async def events(self) -> AsyncIterator[PipelineEvent]:
        """Reasoning and text as they come (tool-call text held back), then any calls,
        then the end.

        The last event is ``Finished`` (reason TOOL_CALLS when the reply was calls) or
        ``Failed``. Leaving early cancels the generation.
        """
        splitter = self.shape.splitter()
        try:
            async for event in self._stream:
                if isinstance(event, TextDelta):
                    part = splitter.feed(event.text)
                    if part.reasoning:
                        yield ReasoningDelta(part.reasoning)
                    if part.content or event.logprobs:
                        yield TextDelta(part.content, event.logprobs)
                    continue
                self._observe(event)
                if event.reason is FinishReason.ERROR:
                    yield Failed(_engine_failure(event))
                    return
                end = splitter.finish()
                if end.reasoning:
                    yield ReasoningDelta(end.reasoning)
                if end.content:
                    yield TextDelta(end.content)
                if end.calls:
                    yield ToolCallsMade(end.calls)
                yield replace(event, reason=FinishReason.TOOL_CALLS) if end.calls else event
        except HearthError as exc:
            yield Failed(exc)
        finally:
            self._stream.cancel()

    async def encode(self, encoder: StreamEncoder) -> AsyncIterator[bytes]:
        """The whole stream in a dialect's format. However it ends (the client gone,
        a failure, the last event), the generation is cancelled unless it finished."""
        try:
            head = encoder.opening()
            if head:
                yield head
            async for event in self.events():
                if isinstance(event, TextDelta):
                    chunk = encoder.text(event)
                elif isinstance(event, ReasoningDelta):
                    chunk = encoder.reasoning(event)
                elif isinstance(event, ToolCallsMade):
                    chunk = encoder.tool_calls(event.calls)
                elif isinstance(event, Failed):
                    chunk = encoder.failed(event.error)
                else:
                    chunk = encoder.finished(event)
                if chunk:
                    yield chunk
            tail = encoder.closing()
            if tail:
                yield tail
        finally:
            self.cancel()

    async def collect(self, is_disconnected: Callable[[], Awaitable[bool]]) -> Result:
        """The whole reply; cancelled if the client goes away meanwhile. An engine
        failure is raised as ``EngineFailedError`` for the dialect's error handler."""
        parts: list[str] = []
        logprobs: list[TokenLogprob] = []

        async def consume() -> Finished:
            async for event in self._stream:
                if isinstance(event, TextDelta):
                    parts.append(event.text)
                    logprobs.extend(event.logprobs)
                else:
                    return event
            raise RuntimeError("generation ended without a Finished event")

        task = asyncio.ensure_future(consume())
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=_DISCONNECT_POLL_S)
                if done:
                    break
                if await is_disconnected():
                    log.info("client disconnected; cancelling generation %s", self.request_id)
                    self._stream.cancel()
        finally:
            if not task.done():
                self._stream.cancel()
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        finished = task.result()
        self._observe(finished)
        if finished.reason is FinishReason.ERROR:
            raise _engine_failure(finished)
        reply = self.shape.splitter().whole(parts)
        if reply.calls:
            finished = replace(finished, reason=FinishReason.TOOL_CALLS)
        return Result(reply.content, reply.calls, finished, tuple(logprobs), reply.reasoning)

    def cancel(self) -> None:
        """Free the slot (within one step) unless the generation already ended."""
        self._stream.cancel()

    def _observe(self, finished: Finished) -> None:
        if self._observer is None:
            return
        try:
            self._observer(self.request_id, self.info.id, finished)
        except Exception:  # an observer (the request log) must never break a response
            log.exception("generation observer failed")


def _engine_failure(finished: Finished) -> EngineFailedError:
    return EngineFailedError(finished.error or "Generation failed.")
