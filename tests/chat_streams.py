"""An OpenAI chat stream read back whole: reasoning, content, tool calls, finish reason.

Shared by the model-family tests, which check each family's reply structure streamed."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StreamedChat:
    reasoning: str
    content: str
    calls: list[tuple[str, str]]  # (name, arguments) in the order of their index
    finish: str | None


def collect_chat_stream(chunks: Iterable[Any]) -> StreamedChat:
    """Join the deltas of an ``openai`` chat stream (``reasoning_content`` included)."""
    reasoning: list[str] = []
    content: list[str] = []
    calls: dict[int, list[str]] = {}
    finish = None
    for chunk in chunks:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        reasoning.append(getattr(delta, "reasoning_content", None) or "")
        content.append(delta.content or "")
        for call in delta.tool_calls or []:
            entry = calls.setdefault(call.index, ["", ""])
            entry[0] += (call.function.name or "") if call.function else ""
            entry[1] += (call.function.arguments or "") if call.function else ""
        finish = chunk.choices[0].finish_reason or finish
    return StreamedChat(
        "".join(reasoning), "".join(content), [(n, a) for n, a in calls.values()], finish
    )
