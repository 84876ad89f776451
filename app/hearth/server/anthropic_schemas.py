"""Anthropic Messages request bodies, validated, and their translation into typed values.

Clients such as Claude Code send the Messages API: a system prompt (a string or text
blocks), turns made of content blocks (text, tool_use, tool_result), and tools with
``input_schema``. The blocks become the same ``ChatMessage`` values every dialect uses.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hearth.core.errors import InvalidRequestError
from hearth.core.generation import ChatMessage, ToolCall, ToolSpec
from hearth.core.images import IMAGE_MARKER, ImageInput
from hearth.core.sampling import SamplingParams
from hearth.server import image_input
from hearth.server.openai_schemas import MAX_MESSAGES, MAX_STOP_STRINGS


class _Lenient(BaseModel):
    """Unknown fields (cache_control, metadata, citations...) are ignored."""

    model_config = ConfigDict(extra="ignore")


class ImageSourceIn(_Lenient):
    type: str
    media_type: str | None = None
    data: str | None = None
    url: str | None = None

    def image(self, where: str) -> ImageInput:
        if self.type == "base64":
            return image_input.from_base64(self.data or "", where)
        if self.type == "url":
            return image_input.from_url(self.url or "", where)
        raise InvalidRequestError(
            f"Image sources of type {self.type!r} are not supported: send the image as "
            "base64.",
            param=where,
        )


class Block(_Lenient):
    """One content block; which fields matter depends on ``type``."""

    type: str
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: dict[str, Any] | None = None
    tool_use_id: str | None = None
    content: str | list[Block] | None = None
    is_error: bool = False
    thinking: str | None = None
    source: ImageSourceIn | None = None


class ThinkingIn(_Lenient):
    """Extended thinking: "enabled" (with a token budget), "adaptive" or "disabled"."""

    type: Literal["enabled", "disabled", "adaptive"]
    budget_tokens: int | None = None


class MessageIn(_Lenient):
    # Claude Code (2.1+) also sends system turns between the others
    role: Literal["user", "assistant", "system"]
    content: str | list[Block]


class ToolDef(_Lenient):
    name: str = Field(min_length=1, max_length=128)
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=dict)


class ToolChoiceIn(_Lenient):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None


class CountTokensRequest(_Lenient):
    model: str
    messages: list[MessageIn] = Field(min_length=1, max_length=MAX_MESSAGES)
    system: str | list[Block] | None = None
    tools: list[ToolDef] | None = Field(default=None, max_length=128)
    tool_choice: ToolChoiceIn | None = None
    thinking: ThinkingIn | None = None

    def template_kwargs(self) -> dict[str, Any]:
        """``thinking`` as the chat template's ``enable_thinking``; unset leaves the
        template's own default."""
        if self.thinking is None:
            return {}
        return {"enable_thinking": self.thinking.type != "disabled"}

    def chat_messages(self) -> list[ChatMessage]:
        system = _system_text(self.system)
        out = [ChatMessage("system", system)] if system else []
        for index, message in enumerate(self.messages):
            out.extend(_turn(message, index))
        image_input.check_request(image for message in out for image in message.images)
        return out

    def tool_specs(self) -> list[ToolSpec]:
        return [ToolSpec(t.name, t.description, t.input_schema) for t in self.tools or ()]


class MessagesRequest(CountTokensRequest):
    max_tokens: int = Field(ge=1)
    stop_sequences: list[str] | None = None
    temperature: float | None = Field(default=None, ge=0.0, le=1.0)
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    top_k: int | None = Field(default=None, ge=0, le=10_000)
    stream: bool = False

    @field_validator("stop_sequences")
    @classmethod
    def _stops(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(value) > MAX_STOP_STRINGS:
            raise ValueError(f"at most {MAX_STOP_STRINGS} stop sequences are allowed")
        return value

    def to_sampling(self) -> SamplingParams:
        return SamplingParams.from_request(
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            max_tokens=self.max_tokens,
            stop=tuple(s for s in self.stop_sequences or () if s),
        )


def _system_text(system: str | list[Block] | None) -> str:
    if system is None or isinstance(system, str):
        return system or ""
    return "\n\n".join(_text_of(block, "system") for block in system)


def _text_of(block: Block, where: str, images: list[ImageInput] | None = None) -> str:
    """A block's text; an image block (where ``images`` gathers them) leaves its marker."""
    if block.type == "text":
        return block.text or ""
    if block.type == "image" and images is not None:
        if block.source is None:
            raise InvalidRequestError("An image block needs a 'source'.", param=where)
        images.append(block.source.image(where))
        return IMAGE_MARKER
    if block.type == "image":
        raise InvalidRequestError("Image blocks are not accepted here.", param=where)
    if block.type == "document":
        raise InvalidRequestError(
            "Document blocks are not supported: send the document's text.", param=where
        )
    raise InvalidRequestError(f"Unsupported content block type {block.type!r}.", param=where)


def _tool_result(block: Block, where: str) -> ChatMessage:
    content = block.content
    if content is None or isinstance(content, str):
        return ChatMessage("tool", content or "", tool_call_id=block.tool_use_id)
    images: list[ImageInput] = []
    text = "\n".join(_text_of(part, where, images) for part in content)
    return ChatMessage("tool", text, tool_call_id=block.tool_use_id, images=tuple(images))


def _turn(message: MessageIn, index: int) -> list[ChatMessage]:
    """One Anthropic turn as chat messages: tool results become tool messages."""
    where = f"messages.{index}.content"
    if isinstance(message.content, str):
        return [ChatMessage(message.role, message.content)]
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCall] = []
    results: list[ChatMessage] = []
    images: list[ImageInput] = []
    for number, block in enumerate(message.content):
        if block.type == "tool_use" and message.role == "assistant":
            call_id, name = block.id or f"toolu_{index}_{len(calls)}", block.name or ""
            calls.append(ToolCall(call_id, name, json.dumps(block.input or {})))
        elif block.type == "tool_result" and message.role == "user":
            results.append(_tool_result(block, f"{where}.{number}"))
        elif block.type == "thinking" and message.role == "assistant":
            thoughts.append(block.thinking or "")  # handed back as reasoning_content
        elif block.type in ("thinking", "redacted_thinking"):
            continue  # encrypted reasoning means nothing to a local model
        else:
            texts.append(_text_of(block, f"{where}.{number}", images))
    text = "".join(texts)
    if message.role == "system":
        return [ChatMessage("system", text, images=tuple(images))]
    if message.role == "assistant":
        reasoning = "".join(thoughts)
        return [
            ChatMessage(
                "assistant", text, tool_calls=tuple(calls), reasoning=reasoning,
                images=tuple(images),
            )
        ]
    user = [ChatMessage("user", text, images=tuple(images))] if text or not results else []
    return results + user
