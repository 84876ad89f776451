"""Pipeline results rendered as Anthropic Messages objects, stream events and errors."""

from __future__ import annotations

import json
import secrets
from typing import Any

from hearth.core.errors import ContextOverflowError, HearthError
from hearth.core.generation import (
    Finished,
    FinishReason,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    Usage,
)
from hearth.server.errors import anthropic_error_json, api_error_for


def new_message_id() -> str:
    return f"msg_{secrets.token_hex(12)}"


def overflow_message(exc: ContextOverflowError) -> str:
    """Anthropic's own wording, which agents such as Claude Code recognise and act on
    (compact the conversation, or lower max_tokens), with the numbers they parse."""
    if exc.n_prompt >= exc.n_ctx:
        return f"prompt is too long: {exc.n_prompt} tokens > {exc.n_ctx} maximum"
    return (
        "input length and `max_tokens` exceed context limit: "
        f"{exc.n_prompt} + {exc.max_tokens} > {exc.n_ctx}, "
        "decrease input length or `max_tokens` and try again"
    )


def stop_reason(finished: Finished) -> str:
    if finished.reason is FinishReason.TOOL_CALLS:
        return "tool_use"
    if finished.reason is FinishReason.LENGTH:
        return "max_tokens"
    return "stop_sequence" if finished.stop_sequence is not None else "end_turn"


def usage_json(usage: Usage) -> dict[str, int]:
    """Anthropic counts prompt tokens read from the cache apart from the others."""
    return {
        "input_tokens": usage.prompt_tokens - usage.cached_tokens,
        "output_tokens": usage.completion_tokens,
        "cache_read_input_tokens": usage.cached_tokens,
        "cache_creation_input_tokens": 0,
    }


def tool_use_block(call: ToolCall) -> dict[str, Any]:
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call)}


def _input(call: ToolCall) -> Any:
    try:
        return json.loads(call.arguments)
    except json.JSONDecodeError:
        return {}


def message_json(
    message_id: str,
    model: str,
    text: str,
    calls: tuple[ToolCall, ...],
    finished: Finished,
    *,
    reasoning: str = "",
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reasoning:  # a thinking block first; a local model signs nothing
        content.append({"type": "thinking", "thinking": reasoning, "signature": ""})
    if text or not calls:
        content.append({"type": "text", "text": text})
    content.extend(tool_use_block(call) for call in calls)
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(finished),
        "stop_sequence": finished.stop_sequence,
        "usage": usage_json(finished.usage),
    }


def event(payload: dict[str, Any]) -> bytes:
    """One server-sent event, named by its type as Anthropic's stream does."""
    data = json.dumps(payload, ensure_ascii=False)
    return f"event: {payload['type']}\ndata: {data}\n\n".encode()


class StreamWriter:
    """The events of one streamed message, with its content block indices (a
    ``generation.StreamEncoder``)."""

    def __init__(self, message_id: str, model: str, prompt_tokens: int) -> None:
        self.message_id = message_id
        self.model = model
        self.prompt_tokens = prompt_tokens
        self._index = -1
        self._text_open = False
        self._thinking_open = False

    def opening(self) -> bytes:
        message: dict[str, Any] = {
            "id": self.message_id, "type": "message", "role": "assistant",
            "model": self.model, "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": self.prompt_tokens, "output_tokens": 0},
        }  # fmt: skip
        return event({"type": "message_start", "message": message})

    def text(self, delta: TextDelta) -> bytes:
        return self._text(delta.text) if delta.text else b""

    def reasoning(self, delta: ReasoningDelta) -> bytes:
        """A ``thinking`` block, streamed with ``thinking_delta`` events."""
        opening = self._close_text()
        if not self._thinking_open:
            opening += self._open({"type": "thinking", "thinking": "", "signature": ""})
            self._thinking_open = True
        body = {"type": "thinking_delta", "thinking": delta.text}
        return opening + event({"type": "content_block_delta", "index": self._index,
                                "delta": body})  # fmt: skip

    def _close_thinking(self) -> bytes:
        if not self._thinking_open:
            return b""
        self._thinking_open = False
        signature = {"type": "signature_delta", "signature": ""}
        return event({"type": "content_block_delta", "index": self._index,
                      "delta": signature}) + event({"type": "content_block_stop",
                                                    "index": self._index})  # fmt: skip

    def _text(self, text: str) -> bytes:
        opening = self._close_thinking()
        if not self._text_open:
            opening += self._open({"type": "text", "text": ""})
            self._text_open = True
        delta = {"type": "text_delta", "text": text}
        return opening + event({"type": "content_block_delta", "index": self._index,
                                "delta": delta})  # fmt: skip

    def tool_calls(self, calls: tuple[ToolCall, ...]) -> bytes:
        out = [self._close_thinking(), self._close_text()]
        for call in calls:
            out.append(self._open({"type": "tool_use", "id": call.id, "name": call.name,
                                   "input": {}}))  # fmt: skip
            delta = {"type": "input_json_delta", "partial_json": json.dumps(_input(call))}
            out.append(event({"type": "content_block_delta", "index": self._index,
                              "delta": delta}))  # fmt: skip
            out.append(event({"type": "content_block_stop", "index": self._index}))
        return b"".join(out)

    def failed(self, error: HearthError) -> bytes:
        api = api_error_for(error)
        return event(anthropic_error_json(api.status, api.message))

    def finished(self, finished: Finished) -> bytes:
        opened_none = self._index < 0
        out = [self._close_thinking(), self._text("") if opened_none else b"", self._close_text()]
        delta = {"stop_reason": stop_reason(finished), "stop_sequence": finished.stop_sequence}
        out.append(event({"type": "message_delta", "delta": delta,
                          "usage": usage_json(finished.usage)}))  # fmt: skip
        out.append(event({"type": "message_stop"}))
        return b"".join(out)

    def closing(self) -> bytes:
        return b""

    def _open(self, block: dict[str, Any]) -> bytes:
        self._index += 1
        return event({"type": "content_block_start", "index": self._index,
                      "content_block": block})  # fmt: skip

    def _close_text(self) -> bytes:
        if not self._text_open:
            return b""
        self._text_open = False
        return event({"type": "content_block_stop", "index": self._index})
