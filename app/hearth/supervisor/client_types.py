"""What the worker's client hands back: its errors, the values it reads, and the
parsing of an OpenAI error body and of one streamed chat chunk.

Kept apart from ``client.py`` (the HTTP calls) so each stays short; ``client.py``
re-exports these names, which the GUI and the CLI import from there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


class WorkerError(Exception):
    """The worker answered with an error, or the conversation with it broke off."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        error_type: str | None = None,
        code: str | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.error_type = error_type
        self.code = code
        self.param = param


class WorkerUnavailableError(WorkerError):
    """The worker could not be reached, or the connection dropped mid-response."""


@dataclass(frozen=True)
class Health:
    """What ``GET /health`` said. ``status`` is "ok", "loading" or "error": "loading"
    and "error" only while no model serves. While models serve, a load beside them is
    in the ``load_*`` fields: ``load_state`` "loading" with its ``load_progress``, or
    "error" with its ``load_error``."""

    status: str
    http_status: int
    model: str | None = None
    progress: float | None = None
    error: str | None = None
    load_error: str | None = None  # a load that failed beside models that still serve
    load_state: str | None = None  # the lifecycle's state beside them ("loading" ...)
    load_model: str | None = None
    load_progress: float | None = None

    @property
    def ok(self) -> bool:
        return self.http_status == 200 and self.status == "ok"

    @property
    def loading(self) -> float | None:
        """The progress (0 to 1) of the load running now, whether models serve beside
        it or none does yet; None when no load runs."""
        if self.status == "loading":
            return self.progress if self.progress is not None else 0.0
        if self.ok and self.load_state == "loading":
            return self.load_progress if self.load_progress is not None else 0.0
        return None


@dataclass(frozen=True)
class ModelMeta:
    """What ``GET /v1/models`` says about the loaded model (unknown fields are None)."""

    id: str
    n_ctx: int | None = None  # context per slot: the most one conversation can use
    n_ctx_train: int | None = None
    n_slots: int | None = None
    remote: bool = False  # a remote engine's model (``engine/model``), not llama.cpp's
    capabilities: tuple[str, ...] = ()  # Ollama's names: "completion", "embedding", ...
    vision: bool = False  # loaded with a projector: it takes images (``meta.vision``)


class ReasoningText(str):
    """A streamed piece of the model's reasoning (``reasoning_content``), not of the
    answer: ``stream_chat_events`` yields it; ``stream_chat`` leaves it out."""


@dataclass(frozen=True)
class StreamedToolCall:
    """A tool call the model made, put together from the stream's deltas."""

    id: str
    name: str
    arguments: str  # JSON text, as the model wrote it (it may not parse)


@dataclass(frozen=True)
class ChatStreamStats:
    """The end of a streamed chat completion: usage and timings, as the worker sent them."""

    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    ttft_ms: float | None = None
    tokens_per_s: float | None = None
    draft_tokens: int | None = None  # speculative decoding: tokens drafted for this reply
    accepted_tokens: int | None = None  # and how many of them the model accepted
    tool_calls: tuple[StreamedToolCall, ...] = ()  # the reply's calls, when it made any

    @property
    def context_used(self) -> int | None:
        if self.prompt_tokens is None:
            return None
        return self.prompt_tokens + (self.completion_tokens or 0)


def error_from_body(status: int, body: bytes) -> WorkerError:
    """Build a WorkerError from an OpenAI-shaped error body (or whatever came back)."""
    try:
        data: Any = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict):
            return WorkerError(
                str(err.get("message") or f"HTTP {status}"),
                status=status,
                error_type=opt_str(err.get("type")),
                code=opt_str(err.get("code")),
                param=opt_str(err.get("param")),
            )
        if isinstance(err, str):
            return WorkerError(err, status=status)
        if isinstance(data.get("detail"), str):
            return WorkerError(data["detail"], status=status)
    text = body.decode("utf-8", "replace").strip()[:500]
    return WorkerError(f"The worker answered HTTP {status}: {text or 'no details'}", status=status)


def opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def sse_data(line: str) -> str | None:
    """The payload of an SSE ``data:`` line, or None for any other line."""
    if not line.startswith("data:"):
        return None
    return line[5:].strip()


def opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def opt_float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def parse_chunk(payload: str, stats: dict[str, Any]) -> str:
    """The delta text of one chunk; usage, timings and finish reason go into ``stats``."""
    try:
        chunk: Any = json.loads(payload)
    except ValueError as exc:
        raise WorkerError(f"The worker sent a malformed stream chunk: {payload[:200]}") from exc
    if not isinstance(chunk, dict):
        return ""
    if "error" in chunk:
        err = error_from_body(200, payload.encode())
        err.status = None
        raise err
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        stats["prompt_tokens"] = opt_int(usage.get("prompt_tokens"))
        stats["completion_tokens"] = opt_int(usage.get("completion_tokens"))
        details = usage.get("prompt_tokens_details")
        if isinstance(details, dict):
            stats["cached_tokens"] = opt_int(details.get("cached_tokens"))
    timings = chunk.get("timings")
    if isinstance(timings, dict):
        stats["ttft_ms"] = opt_float(timings.get("ttft_ms"))
        stats["tokens_per_s"] = opt_float(timings.get("decode_tokens_per_s"))
        stats["draft_tokens"] = opt_int(timings.get("draft_tokens"))
        stats["accepted_tokens"] = opt_int(timings.get("accepted_tokens"))
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices:
        return ""
    first = choices[0]
    if not isinstance(first, dict):
        return ""
    if isinstance(first.get("finish_reason"), str):
        stats["finish_reason"] = first["finish_reason"]
    delta = first.get("delta")
    if not isinstance(delta, dict):
        return ""
    calls = delta.get("tool_calls")
    if isinstance(calls, list):
        _add_tool_deltas(calls, stats.setdefault(_CALLS, {}))
    content, reasoning = delta.get("content"), delta.get("reasoning_content")
    if isinstance(content, str) and content:
        return content
    return ReasoningText(reasoning) if isinstance(reasoning, str) and reasoning else ""


_CALLS = "_tool_call_parts"  # the calls' pieces in ``stats`` until the stream ends


def _add_tool_deltas(calls: list[Any], parts: dict[int, list[str]]) -> None:
    """OpenAI streams a call as pieces by ``index``: its id and name first, then its
    arguments' text in any number of chunks."""
    for position, call in enumerate(calls):
        if not isinstance(call, dict):
            continue
        index = call.get("index")
        key = index if isinstance(index, int) else position
        slot = parts.setdefault(key, ["", "", ""])
        if isinstance(call.get("id"), str):
            slot[0] = call["id"]
        function = call.get("function")
        if isinstance(function, dict):
            if isinstance(function.get("name"), str):
                slot[1] += function["name"]
            if isinstance(function.get("arguments"), str):
                slot[2] += function["arguments"]


def finish_stats(stats: dict[str, Any]) -> ChatStreamStats:
    """The stream's end: what ``parse_chunk`` gathered, tool calls assembled."""
    parts: dict[int, list[str]] = stats.pop(_CALLS, {})
    calls = tuple(
        StreamedToolCall(call_id or f"call_{key}", name, arguments)
        for key, (call_id, name, arguments) in sorted(parts.items())
        if name
    )
    return ChatStreamStats(**stats, tool_calls=calls)
