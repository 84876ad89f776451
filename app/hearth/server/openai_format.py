"""Engine results rendered as OpenAI response objects and stream chunks."""

from __future__ import annotations

import base64
import json
import math
import secrets
import struct
import time
from collections.abc import Sequence
from typing import Any

from hearth.core.errors import HearthError
from hearth.core.generation import (
    Finished,
    FinishReason,
    ReasoningDelta,
    TextDelta,
    Timings,
    TokenLogprob,
    ToolCall,
    Usage,
)
from hearth.core.model_info import ModelInfo
from hearth.engine.capabilities import ModelTraits
from hearth.engine.embedder import Embeddings
from hearth.server.catalog import CatalogEntry
from hearth.server.errors import api_error_for, error_body
from hearth.server.openai_logprobs import logprobs_json


def new_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(12)}"


def usage_json(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
    }


def timings_json(timings: Timings | None) -> dict[str, float] | None:
    if timings is None:
        return None
    return {
        "queued_ms": round(timings.queued_ms, 3),
        "prompt_ms": round(timings.prompt_ms, 3),
        "ttft_ms": round(timings.ttft_ms, 3),
        "decode_ms": round(timings.decode_ms, 3),
        "decode_tokens_per_s": round(timings.decode_tokens_per_s, 3),
        "draft_tokens": timings.draft_tokens,
        "accepted_tokens": timings.accepted_tokens,
        "cache_disk_tokens": timings.cache_disk_tokens,  # of cached_tokens, read from disk
        "image_ms": timings.image_ms,  # of prompt_ms, the vision encoder's
        "image_tokens": timings.image_tokens,
    }


def finish_reason(finished: Finished) -> str:
    """OpenAI knows stop/length/tool_calls; a cancelled stream simply ends with stop."""
    if finished.reason is FinishReason.LENGTH:
        return "length"
    return "tool_calls" if finished.reason is FinishReason.TOOL_CALLS else "stop"


def model_json(info: ModelInfo, traits: ModelTraits | None = None) -> dict[str, Any]:
    family: dict[str, Any] = {}
    if traits is not None:
        family = {
            "capabilities": traits.capabilities() + (["vision"] if info.vision else []),
            "tool_format": traits.tool_format.value,
            "tool_format_source": traits.format_source,
            "reasoning_format": traits.reasoning.name if traits.reasoning else None,
        }
    return {
        "id": info.id,
        "object": "model",
        "created": info.created,
        "owned_by": "hearth",
        "meta": {
            "architecture": info.architecture,
            "n_params": info.n_params,
            "size": info.size_bytes,
            "quantization": info.quantization,
            "n_ctx_train": info.n_ctx_train,
            "n_ctx": info.n_ctx_per_slot,
            "n_slots": info.n_slots,
            "n_vocab": info.n_vocab,
            "fim": info.has_fim,
            "vision": info.vision,  # a projector is loaded: it takes images
            "loaded": True,
            **family,
        },
    }


def catalog_model_json(entry: CatalogEntry) -> dict[str, Any]:
    """A library model that is not loaded (a request naming it loads it)."""
    return {
        "id": entry.id,
        "object": "model",
        "created": entry.created,
        "owned_by": "hearth",
        "meta": {
            "loaded": False,
            "vision": entry.projector is not None,  # it loads with the projector beside it
            "architecture": entry.architecture,
            "size": entry.size_bytes,
            "quantization": entry.quantization,
        },
    }


def sse(payload: dict[str, Any] | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
    return f"data: {data}\n\n".encode()


class ChunkWriter:
    """Builds the chunks of one streamed response with a shared id and timestamp."""

    def __init__(self, *, chat: bool, model: str) -> None:
        self.chat = chat
        self.model = model
        self.id = new_id("chatcmpl" if chat else "cmpl")
        self.created = int(time.time())
        self.object = "chat.completion.chunk" if chat else "text_completion"
        self._offset = 0  # text offset, for completions' logprobs

    def _chunk(self, choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": self.object,
            "created": self.created,
            "model": self.model,
            "system_fingerprint": "hearth",
            "choices": choices,
            **extra,
        }

    def _choice(
        self, text: str | None, reason: str | None, *, role: bool = False
    ) -> dict[str, Any]:
        if self.chat:
            delta: dict[str, Any] = {}
            if role:
                delta["role"] = "assistant"
            if text is not None:
                delta["content"] = text
            return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}
        return {"index": 0, "text": text or "", "logprobs": None, "finish_reason": reason}

    def opening(self) -> dict[str, Any] | None:
        """Chat streams announce the assistant role first, as OpenAI does."""
        return self._chunk([self._choice("", None, role=True)]) if self.chat else None

    def delta(self, text: str, logprobs: Sequence[TokenLogprob] = ()) -> dict[str, Any]:
        choice = self._choice(text, None)
        if logprobs:
            choice["logprobs"] = logprobs_json(logprobs, chat=self.chat, start_offset=self._offset)
        self._offset += len(text)
        return self._chunk([choice])

    def reasoning(self, text: str) -> dict[str, Any]:
        """Reasoning goes in ``reasoning_content``, as DeepSeek's API and llama-server
        send it."""
        delta = {"reasoning_content": text}
        return self._chunk([{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}])

    def tool_calls(self, calls: list[ToolCall]) -> dict[str, Any]:
        delta = {"tool_calls": tool_calls_json(calls, with_index=True)}
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}
        return self._chunk([choice])

    def closing(self, finished: Finished) -> dict[str, Any]:
        return self._chunk(
            [self._choice(None if self.chat else "", finish_reason(finished))],
            usage=usage_json(finished.usage),
            timings=timings_json(finished.timings),
        )

    def usage_only(self, finished: Finished) -> dict[str, Any]:
        return self._chunk([], usage=usage_json(finished.usage))


class SseStream:
    """OpenAI's streamed chunks as server-sent events, ending with ``[DONE]``."""

    def __init__(self, writer: ChunkWriter, *, include_usage: bool, echo: str = "") -> None:
        self.writer = writer
        self.include_usage = include_usage
        self.echo = echo

    def opening(self) -> bytes:
        opening = self.writer.opening()
        head = sse(opening) if opening is not None else b""
        return head + (sse(self.writer.delta(self.echo)) if self.echo else b"")

    def text(self, delta: TextDelta) -> bytes:
        if not delta.text and not delta.logprobs:
            return b""
        return sse(self.writer.delta(delta.text, delta.logprobs))

    def reasoning(self, delta: ReasoningDelta) -> bytes:
        return sse(self.writer.reasoning(delta.text)) if self.writer.chat else b""

    def tool_calls(self, calls: tuple[ToolCall, ...]) -> bytes:
        return sse(self.writer.tool_calls(list(calls)))

    def failed(self, error: HearthError) -> bytes:
        api = api_error_for(error)
        return sse(error_body(api.message, api.type, api.code, api.param))

    def finished(self, finished: Finished) -> bytes:
        usage = sse(self.writer.usage_only(finished)) if self.include_usage else b""
        return sse(self.writer.closing(finished)) + usage

    def closing(self) -> bytes:
        return sse("[DONE]")


def tool_calls_json(calls: list[ToolCall], *, with_index: bool = False) -> list[dict[str, Any]]:
    out = []
    for index, call in enumerate(calls):
        item: dict[str, Any] = {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments},
        }
        if with_index:
            item["index"] = index
        out.append(item)
    return out


def completion_json(
    *,
    chat: bool,
    model: str,
    text: str,
    finished: Finished,
    tool_calls: list[ToolCall] | None = None,
    logprobs: dict[str, Any] | None = None,
    reasoning: str = "",
) -> dict[str, Any]:
    reason = finish_reason(finished)
    if chat:
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if reasoning:
            message["reasoning_content"] = reasoning
        if tool_calls:
            message["tool_calls"] = tool_calls_json(tool_calls)
        else:
            message["content"] = text
        choice: dict[str, Any] = {
            "index": 0,
            "message": message,
            "logprobs": logprobs,
            "finish_reason": reason,
        }
    else:
        choice = {"index": 0, "text": text, "logprobs": logprobs, "finish_reason": reason}
    return {
        "id": new_id("chatcmpl" if chat else "cmpl"),
        "object": "chat.completion" if chat else "text_completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "hearth",
        "choices": [choice],
        "usage": usage_json(finished.usage),
        "timings": timings_json(finished.timings),
    }


def _shorten(vector: list[float], dimensions: int | None) -> list[float]:
    """OpenAI's ``dimensions``: keep the first N components and re-normalise."""
    if dimensions is None or dimensions >= len(vector):
        return vector
    head = vector[:dimensions]
    norm = math.sqrt(sum(v * v for v in head)) or 1.0
    return [v / norm for v in head]


def embeddings_json(
    result: Embeddings, model: str, encoding: str, dimensions: int | None
) -> dict[str, Any]:
    data = []
    for index, vector in enumerate(result.vectors):
        values = _shorten(vector, dimensions)
        embedding: list[float] | str = values
        if encoding == "base64":
            embedding = base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    usage = {"prompt_tokens": result.prompt_tokens, "total_tokens": result.prompt_tokens}
    return {"object": "list", "data": data, "model": model, "usage": usage}
