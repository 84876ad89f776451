"""One generation pipeline under every dialect.

A dialect's decoder turns its JSON into a ``PipelineRequest``; the pipeline resolves the
model, renders and grammar-constrains the prompt, starts the engine and yields plain
events; the dialect's encoder turns those into its own JSON, SSE or NDJSON. Tool-call
parsing, the choice of grammar and "finished with an error" are written here once, so
the dialects cannot drift apart (llama.cpp's server does the same: one task result,
a ``to_json_*`` per format at the edge).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from hearth.core.errors import EngineFailedError, HearthError, InvalidRequestError
from hearth.core.generation import (
    ChatMessage,
    Failed,
    Finished,
    FinishReason,
    GenerationRequest,
    ReasoningDelta,
    TextDelta,
    TokenLogprob,
    ToolCall,
    ToolCallsMade,
    ToolSpec,
)
from hearth.core.images import ImageInput
from hearth.core.model_info import ModelInfo
from hearth.core.sampling import SamplingParams
from hearth.engine.generation_stream import GenerationStream
from hearth.engine.grammar import JSON_OBJECT_GRAMMAR, grammar_for_schema
from hearth.engine.reasoning import with_reasoning
from hearth.engine.tool_calls import ToolFormat, call_grammar
from hearth.server.image_input import refuse_images
from hearth.server.model_manager import ModelManager
from hearth.server.reply import ReplyShape, marker_texts

log = logging.getLogger(__name__)

_DISCONNECT_POLL_S = 0.25

PipelineEvent = TextDelta | ReasoningDelta | ToolCallsMade | Finished | Failed
GenerationObserver = Callable[[str, str, Finished], None]
"""Told (request id, model id, finished event) when a generation ends."""


class RemoteBackends(Protocol):
    """Models another server runs (server/remote): the pipeline hands them over."""

    def serves(self, model: str | None) -> bool: ...
    async def resolve(self, model: str) -> ModelInfo: ...
    async def start(self, request: PipelineRequest) -> Generation: ...
    async def count_tokens(
        self, model: str, prompt: ChatPrompt, body: dict[str, Any] | None = None
    ) -> int: ...


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
class ToolChoice:
    """Whether the model may, must, or must not call a tool; ``name`` forces one."""

    mode: Literal["auto", "none", "required", "named"] = "auto"
    name: str | None = None

    @classmethod
    def parse(cls, choice: object, name: object = None) -> ToolChoice:
        """OpenAI's form, shared by chat and Responses: "auto" (or nothing), "none",
        "required", or an object whose function ``name`` the caller has read out."""
        if isinstance(choice, dict):
            if isinstance(name, str) and name:
                return cls("named", name)
        elif choice is None or choice == "auto":
            return cls()
        elif choice == "none":
            return cls("none")
        elif choice == "required":
            return cls("required")
        raise InvalidRequestError(f"Unsupported tool_choice: {choice!r}", param="tool_choice")


@dataclass(frozen=True)
class OutputFormat:
    """The shape the reply must take: free text, any JSON object, or a JSON schema."""

    kind: Literal["text", "json", "json_schema"] = "text"
    schema: dict[str, Any] | None = None


@dataclass(frozen=True)
class ChatPrompt:
    """Messages for the model's chat template, with the tools it may call."""

    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice = field(default_factory=ToolChoice)
    # The client's chat_template_kwargs (enable_thinking, reasoning_effort ...).
    template_kwargs: dict[str, Any] = field(default_factory=dict)

    def images(self) -> tuple[ImageInput, ...]:
        """The messages' images in order: the i-th stands at the rendered prompt's i-th
        ``IMAGE_MARKER``."""
        return tuple(image for message in self.messages for image in message.images)

    def offered_tools(self) -> list[ToolSpec]:
        """The tools shown to the model: none when the client said "none"."""
        return list(self.tools) if self.tool_choice.mode != "none" else []


@dataclass(frozen=True)
class TextPrompt:
    """A prompt used as is (special tokens in it are parsed)."""

    text: str


@dataclass(frozen=True)
class TokenPrompt:
    tokens: tuple[int, ...]


@dataclass(frozen=True)
class FillInMiddle:
    """Code completion between ``prefix`` and ``suffix``, with the model's FIM tokens."""

    prefix: str
    suffix: str


Prompt = ChatPrompt | TextPrompt | TokenPrompt | FillInMiddle


@dataclass(frozen=True)
class PipelineRequest:
    """A generation request with no trace of the dialect it came in."""

    model: str | None
    prompt: Prompt
    params: SamplingParams
    output: OutputFormat = field(default_factory=OutputFormat)
    request_id: str = ""
    keep_alive: float | None = None  # seconds; Ollama's per-request model lifetime


@dataclass(frozen=True)
class Result:
    """A whole reply: its text (reasoning and tool calls taken out), calls, and how it
    ended."""

    text: str
    calls: tuple[ToolCall, ...]
    finished: Finished
    logprobs: tuple[TokenLogprob, ...] = ()
    reasoning: str = ""


class Pipeline:
    """Resolves the model, prepares the prompt and runs it; knows no wire format."""

    def __init__(
        self,
        models: ModelManager,
        observer: GenerationObserver | None = None,
        remote: RemoteBackends | None = None,
    ) -> None:
        self.models = models
        self.remote = remote
        self._observer = observer

    async def resolve(self, model: str | None, keep_alive: float | None = None) -> ModelInfo:
        if self.remote is not None and self.remote.serves(model):
            return await self.remote.resolve(model or "")
        info = await self.models.resolve(model, keep_alive=keep_alive)
        return info

    async def count_tokens(
        self, model: str | None, prompt: ChatPrompt, body: dict[str, Any] | None = None
    ) -> int:
        """How many tokens ``prompt`` takes as the model's chat template renders it; a
        remote engine's model is counted by the engine (``body``: the client's request,
        which an engine speaking the same dialect is given as it came)."""
        if self.remote is not None and self.remote.serves(model):
            refuse_images(prompt.messages, model or "", remote=True)
            return await self.remote.count_tokens(model or "", prompt, body)
        resident = await self.models.use(model)
        if not resident.info.vision:
            refuse_images(prompt.messages, resident.info.id)
        engine = resident.engine
        text = engine.render_chat(prompt.messages, prompt.offered_tools(), prompt.template_kwargs)
        return await engine.count_tokens(text, prompt.images())

    async def start(self, request: PipelineRequest) -> Generation:
        """Validate and queue; errors (a prompt too long, a bad grammar) surface here."""
        if self.remote is not None and self.remote.serves(request.model):
            if isinstance(request.prompt, ChatPrompt):
                refuse_images(request.prompt.messages, request.model or "", remote=True)
            return await self.remote.start(request)  # another server runs this model
        resident = await self.models.use(
            request.model, keep_alive=request.keep_alive, request_id=request.request_id,
            generate=True,
        )  # fmt: skip
        info = resident.info
        if isinstance(request.prompt, ChatPrompt) and not info.vision:
            refuse_images(request.prompt.messages, info.id)
        engine, prompt = resident.engine, request.prompt
        tool_format: ToolFormat | None = None
        forced: str | None = None
        shape = ReplyShape()
        if isinstance(prompt, ChatPrompt):
            tools = prompt.offered_tools()
            tool_format = engine.tool_format if tools else None
            text = engine.render_chat(prompt.messages, tools, prompt.template_kwargs)
            shape = ReplyShape(engine.reasoning, text, tool_format, tuple(tools))
            forced = await asyncio.to_thread(  # a big tool schema compiles slowly
                _forced_call_grammar, tools, prompt.tool_choice, shape
            )
            # The markers the reply is taken apart by must reach the text, as
            # llama-server's preserved_tokens do; other control tokens stay hidden.
            keep = engine.preserved_token_ids(marker_texts(shape.reasoning, tool_format))
            params = replace(request.params, preserved_tokens=keep)
            branch = engine.branch_prompt(prompt.messages, tools, prompt.template_kwargs)
            gen = GenerationRequest(prompt=text, params=params, images=prompt.images(),
                                    branch_prompt=branch)  # fmt: skip
        elif isinstance(prompt, TextPrompt):
            gen = GenerationRequest(prompt=prompt.text, params=request.params)
        elif isinstance(prompt, TokenPrompt):
            gen = GenerationRequest(prompt_tokens=prompt.tokens, params=request.params)
        else:
            tokens = tuple(engine.fim_prompt(prompt.prefix, prompt.suffix))
            gen = GenerationRequest(prompt_tokens=tokens, params=request.params)
        grammar = forced or grammar_for_output(request.output)
        gen = replace(
            gen, params=replace(gen.params, grammar=grammar), request_id=request.request_id
        )
        stream = await engine.start(gen)
        return Generation(
            stream, info, tool_format, request.request_id, self._observer, shape=shape
        )


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


def grammar_for_output(output: OutputFormat) -> str | None:
    """The requested output format as a GBNF grammar (None for plain text)."""
    if output.kind == "text":
        return None
    if output.kind == "json_schema" and output.schema is not None:
        return grammar_for_schema(output.schema)
    return JSON_OBJECT_GRAMMAR


def _forced_call_grammar(
    tools: list[ToolSpec], choice: ToolChoice, shape: ReplyShape
) -> str | None:
    """A required or named tool choice: a grammar makes the model call it (after its
    reasoning, for a model that reasons)."""
    fmt = shape.tool_format
    if not tools or fmt is None or choice.mode in ("auto", "none"):
        return None
    grammar = call_grammar(tools, fmt, only=choice.name if choice.mode == "named" else None)
    if shape.reasoning is None:
        return grammar
    return with_reasoning(grammar, shape.reasoning, shape.prompt)
