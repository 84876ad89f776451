"""What a remote engine's stream decodes into, before the backend times and ends it.

The decoders (OpenAI SSE, Ollama NDJSON) know wire JSON and nothing of timing or
failure policy; the backend turns a :class:`StreamEnd` into the pipeline's
``Finished`` (with timings measured at Hearth) and a :class:`StreamError` into
``Failed`` attributed to the engine.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from hearth.core.generation import (
    FinishReason,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallsMade,
)


@dataclass(frozen=True)
class StreamEnd:
    """The engine said the generation is over."""

    reason: FinishReason
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    stop_sequence: str | None = None
    decode_tokens_per_s: float | None = None  # as the engine measured it, if it says


@dataclass(frozen=True)
class StreamError:
    """The engine reported an error inside the stream (after its 200)."""

    message: str


WireEvent = TextDelta | ReasoningDelta | ToolCallsMade | StreamEnd | StreamError


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def parse_json_line(line: bytes | str) -> dict[str, Any] | None:
    """One JSON object, or None for a line that is not one (blank, comment, junk)."""
    try:  # bytes decoded first: json.loads would sniff their encoding each time
        value = json.loads(line.decode() if isinstance(line, bytes) else line)
    except ValueError:  # UnicodeDecodeError too
        return None
    return value if isinstance(value, dict) else None


def arguments_text(arguments: object) -> str:
    """Tool-call arguments as the JSON-object text the pipeline's ToolCall carries."""
    if isinstance(arguments, str):
        return arguments or "{}"
    return json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)


def calls_event(calls: list[ToolCall]) -> list[WireEvent]:
    return [ToolCallsMade(tuple(calls))] if calls else []


def finish_reason(value: object, has_calls: bool) -> FinishReason:
    """An engine's finish reason in the pipeline's terms (unknown ones end as "stop")."""
    if has_calls:
        return FinishReason.TOOL_CALLS
    if value == "length":
        return FinishReason.LENGTH
    return FinishReason.STOP
