"""Engine results rendered as Ollama JSON: NDJSON lines, tags, show."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from typing import Any

from hearth.core.errors import HearthError
from hearth.core.generation import Finished, FinishReason, ReasoningDelta, TextDelta, ToolCall
from hearth.core.model_info import ModelInfo
from hearth.core.residency import LoadedModel
from hearth.engine.capabilities import ModelTraits
from hearth.server.catalog import CatalogEntry

OLLAMA_API_VERSION = "0.12.0"  # the Ollama API level these routes follow
_NS_PER_MS = 1_000_000


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")


def ndjson(payload: dict[str, Any]) -> bytes:
    return (json.dumps(payload, ensure_ascii=False) + "\n").encode()


def ollama_name(info: ModelInfo) -> str:
    """``id:latest``; a remote engine's tagged model (``box/qwen3:32b``) keeps its tag."""
    return info.id if ":" in info.id else f"{info.id}:latest"


def parameter_size(n_params: int) -> str:
    for divisor, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n_params >= divisor:
            return f"{n_params / divisor:.1f}{suffix}"
    return str(n_params)


def details(info: ModelInfo) -> dict[str, Any]:
    return {
        "parent_model": "",
        "format": "gguf",
        "family": info.architecture,
        "families": [info.architecture],
        "parameter_size": parameter_size(info.n_params),
        "quantization_level": info.quantization,
    }


def tag_entry(info: ModelInfo) -> dict[str, Any]:
    modified = datetime.datetime.fromtimestamp(info.created, datetime.timezone.utc)
    return {
        "name": ollama_name(info),
        "model": ollama_name(info),
        "modified_at": modified.isoformat().replace("+00:00", "Z"),
        "size": info.size_bytes,
        "digest": "",
        "details": details(info),
    }


def catalog_tag_entry(entry: CatalogEntry) -> dict[str, Any]:
    modified = datetime.datetime.fromtimestamp(entry.created, datetime.timezone.utc)
    return {
        "name": f"{entry.id}:latest",
        "model": f"{entry.id}:latest",
        "modified_at": modified.isoformat().replace("+00:00", "Z"),
        "size": entry.size_bytes,
        "digest": "",
        "details": {
            "parent_model": "", "format": "gguf", "family": entry.architecture or "",
            "families": [entry.architecture] if entry.architecture else [],
            "parameter_size": "", "quantization_level": entry.quantization or "",
        },
    }  # fmt: skip


def ps_entry(loaded: LoadedModel) -> dict[str, Any]:
    """One loaded model as Ollama's ``/api/ps`` lists it: ``size`` is its memory,
    ``size_vram`` the share of it on GPUs (by the layers offloaded)."""
    info = loaded.info
    on_gpu = info.gpu_layers / info.n_layer if info.n_layer else 0.0
    expires = (
        datetime.datetime.fromtimestamp(loaded.expires_at, datetime.timezone.utc)
        if loaded.expires_at is not None
        else datetime.datetime(2999, 1, 1, tzinfo=datetime.timezone.utc)
    )
    return {
        **tag_entry(info),
        "size": loaded.memory_bytes,
        "expires_at": expires.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "size_vram": round(loaded.memory_bytes * min(on_gpu, 1.0)),
        "context_length": info.n_ctx_per_slot,
    }


def fim_template(prefix: str, suffix: str, middle: str) -> str:
    """A Go template with ``.Suffix``: Continue enables autocomplete when it sees one."""
    return (
        "{{- if .Suffix }}" + prefix + "{{ .Prompt }}" + suffix + "{{ .Suffix }}" + middle
        + "{{- else }}{{ .Prompt }}{{- end }}"
    )  # fmt: skip


def show_json(info: ModelInfo, template: str, traits: ModelTraits | None = None) -> dict[str, Any]:
    """Copilot's model picker reads ``capabilities``: ``tools`` for agent mode."""
    arch = info.architecture
    fallback = ["completion"] + (["insert"] if info.has_fim else [])
    capabilities = traits.capabilities() if traits is not None else fallback
    if info.vision:
        capabilities = [*capabilities, "vision"]
    return {
        "modelfile": f"FROM {info.path}\n",
        "parameters": "",
        "template": template,
        "details": {**details(info), **family_json(traits)},
        "model_info": {
            "general.architecture": arch,
            "general.parameter_count": info.n_params,
            f"{arch}.context_length": info.n_ctx_train,
        },
        "capabilities": capabilities,
        "modified_at": tag_entry(info)["modified_at"],
    }


def family_json(traits: ModelTraits | None) -> dict[str, Any]:
    """The family formats in use (detected or chosen at load): how calls and reasoning
    are parsed for this model."""
    if traits is None:
        return {}
    reasoning = traits.reasoning.name if traits.reasoning is not None else None
    return {
        "tool_format": traits.tool_format.value,
        "tool_format_source": traits.format_source,  # "detected", or "chosen" at load
        "reasoning_format": reasoning,
    }


def done_reason(finished: Finished) -> str:
    return "length" if finished.reason is FinishReason.LENGTH else "stop"


def final_stats(finished: Finished) -> dict[str, Any]:
    timings = finished.timings
    prompt_ns = int(timings.prompt_ms * _NS_PER_MS) if timings else 0
    eval_ns = int(timings.decode_ms * _NS_PER_MS) if timings else 0
    total_ns = int((timings.ttft_ms + timings.decode_ms) * _NS_PER_MS) if timings else 0
    return {
        "done": True,
        "done_reason": done_reason(finished),
        "total_duration": total_ns,
        "load_duration": 0,
        "prompt_eval_count": finished.usage.prompt_tokens,
        "prompt_eval_duration": prompt_ns,
        "eval_count": finished.usage.completion_tokens,
        "eval_duration": eval_ns,
    }


def _message(text: str, calls: tuple[ToolCall, ...]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"function": {"name": c.name, "arguments": json.loads(c.arguments)}} for c in calls
        ]
    return message


def chat_chunk(name: str, text: str, calls: tuple[ToolCall, ...] = ()) -> dict[str, Any]:
    """One streamed line of /api/chat."""
    return {"model": name, "created_at": now_iso(), "message": _message(text, calls),
            "done": False}  # fmt: skip


def chat_final(
    name: str, finished: Finished, text: str, calls: tuple[ToolCall, ...] = ()
) -> dict[str, Any]:
    """The last line (or the whole non-streamed reply) of /api/chat."""
    return {"model": name, "created_at": now_iso(), "message": _message(text, calls),
            **final_stats(finished)}  # fmt: skip


def generate_chunk(name: str, text: str, calls: tuple[ToolCall, ...] = ()) -> dict[str, Any]:
    """One streamed line of /api/generate (which has no tools: ``calls`` stays empty)."""
    return {"model": name, "created_at": now_iso(), "response": text, "done": False}


def generate_final(
    name: str, finished: Finished, text: str, calls: tuple[ToolCall, ...] = ()
) -> dict[str, Any]:
    return {"model": name, "created_at": now_iso(), "response": text, **final_stats(finished)}


def loaded_json(name: str, payload: dict[str, Any]) -> dict[str, Any]:
    """What Ollama answers to an empty request: the model is loaded, nothing generated."""
    return {"model": name, "created_at": now_iso(), **payload, "done_reason": "load",
            "done": True}  # fmt: skip


def with_thinking(payload: dict[str, Any], thinking: str) -> dict[str, Any]:
    """Reasoning in Ollama's ``thinking`` field: on the message for /api/chat, beside
    ``response`` for /api/generate."""
    if thinking:
        target = payload.get("message", payload)
        target["thinking"] = thinking
    return payload


ChunkMaker = Callable[[str, str, tuple[ToolCall, ...]], dict[str, Any]]
FinalMaker = Callable[[str, Finished, str, tuple[ToolCall, ...]], dict[str, Any]]


class NdjsonStream:
    """Ollama's streamed lines (chat or generate, by the makers given)."""

    def __init__(self, name: str, chunk: ChunkMaker, final: FinalMaker) -> None:
        self.name = name
        self.chunk = chunk
        self.final = final

    def opening(self) -> bytes:
        return b""

    def text(self, delta: TextDelta) -> bytes:
        return ndjson(self.chunk(self.name, delta.text, ())) if delta.text else b""

    def reasoning(self, delta: ReasoningDelta) -> bytes:
        return ndjson(with_thinking(self.chunk(self.name, "", ()), delta.text))

    def tool_calls(self, calls: tuple[ToolCall, ...]) -> bytes:
        return ndjson(self.chunk(self.name, "", calls))

    def failed(self, error: HearthError) -> bytes:
        return ndjson({"error": error.message})

    def finished(self, finished: Finished) -> bytes:
        return ndjson(self.final(self.name, finished, "", ()))

    def closing(self) -> bytes:
        return b""
