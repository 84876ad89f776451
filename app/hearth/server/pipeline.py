"""One generation pipeline under every dialect.

A dialect's decoder turns its JSON into a ``PipelineRequest``; the pipeline resolves the
model, renders and grammar-constrains the prompt, and starts the engine; the running
``Generation`` (generation.py) yields plain events, which the dialect's encoder turns
into its own JSON, SSE or NDJSON. The choice of grammar here, and tool-call parsing and
"finished with an error" there, are written once, so the dialects cannot drift apart
(llama.cpp's server does the same: one task result, a ``to_json_*`` per format at the
edge).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from hearth.core.errors import InvalidRequestError
from hearth.core.generation import ChatMessage, GenerationRequest, ToolSpec
from hearth.core.images import ImageInput
from hearth.core.model_info import ModelInfo
from hearth.core.sampling import SamplingParams
from hearth.engine.grammar import JSON_OBJECT_GRAMMAR, grammar_for_schema
from hearth.engine.reasoning import with_reasoning
from hearth.engine.tool_calls import ToolFormat, call_grammar
from hearth.server.generation import Generation, GenerationObserver
from hearth.server.image_input import refuse_images
from hearth.server.model_manager import ModelManager
from hearth.server.reply import ReplyShape, marker_texts

log = logging.getLogger(__name__)


class RemoteBackends(Protocol):
    """Models another server runs (server/remote): the pipeline hands them over."""

    def serves(self, model: str | None) -> bool: ...
    async def resolve(self, model: str) -> ModelInfo: ...
    async def start(self, request: PipelineRequest) -> Generation: ...
    async def count_tokens(
        self, model: str, prompt: ChatPrompt, body: dict[str, Any] | None = None
    ) -> int: ...


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
