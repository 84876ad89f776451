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
from hearth.core.sampling import SamplingParams
from hearth.server.openai_schemas import MAX_MESSAGES, MAX_STOP_STRINGS


class _Lenient(BaseModel):
    """Unknown fields (cache_control, metadata, citations...) are ignored."""

    model_config = ConfigDict(extra="ignore")


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


def _text_of(block: Block, where: str) -> str:
    if block.type == "text":
        return block.text or ""
    if block.type in ("image", "document"):
        raise InvalidRequestError(
            f"This model reads text only: {block.type} blocks are not supported.", param=where
        )
    raise InvalidRequestError(f"Unsupported content block type {block.type!r}.", param=where)


def _tool_result_text(block: Block, where: str) -> str:
    content = block.content
    if content is None or isinstance(content, str):
        return content or ""
    return "\n".join(_text_of(part, where) for part in content)


def _turn(message: MessageIn, index: int) -> list[ChatMessage]:
    """One Anthropic turn as chat messages: tool results become tool messages."""
    where = f"messages.{index}.content"
    if isinstance(message.content, str):
        return [ChatMessage(message.role, message.content)]
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCall] = []
    results: list[ChatMessage] = []
    for block in message.content:
        if block.type == "tool_use" and message.role == "assistant":
            call_id, name = block.id or f"toolu_{index}_{len(calls)}", block.name or ""
            calls.append(ToolCall(call_id, name, json.dumps(block.input or {})))
        elif block.type == "tool_result" and message.role == "user":
            text = _tool_result_text(block, where)
            results.append(ChatMessage("tool", text, tool_call_id=block.tool_use_id))
        elif block.type == "thinking" and message.role == "assistant":
            thoughts.append(block.thinking or "")  # handed back as reasoning_content
        elif block.type in ("thinking", "redacted_thinking"):
            continue  # encrypted reasoning means nothing to a local model
        else:
            texts.append(_text_of(block, where))
    text = "".join(texts)
    if message.role == "system":
        return [ChatMessage("system", text)]
    if message.role == "assistant":
        reasoning = "".join(thoughts)
        return [ChatMessage("assistant", text, tool_calls=tuple(calls), reasoning=reasoning)]
    return results + ([ChatMessage("user", text)] if text or not results else [])
