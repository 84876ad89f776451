"""Speaking Ollama to an engine: ``/api/chat`` and ``/api/generate``, streamed as
NDJSON, and the engine's lines back as wire events.

Ollama has no ``tool_choice``: the tools are offered and the model decides (a client's
"required" cannot be enforced there). Its tool calls carry arguments as an object and,
in older versions, no id; Hearth gives them one.
"""

from __future__ import annotations

import json
from typing import Any

from hearth.core.errors import InvalidRequestError
from hearth.core.generation import ChatMessage, ReasoningDelta, TextDelta, ToolCall
from hearth.core.sampling import SamplingParams
from hearth.server.pipeline import (
    ChatPrompt,
    FillInMiddle,
    OutputFormat,
    PipelineRequest,
    TextPrompt,
)
from hearth.server.remote.wire import (
    StreamEnd,
    StreamError,
    WireEvent,
    arguments_text,
    calls_event,
    finish_reason,
    new_call_id,
    parse_json_line,
)

CHAT_PATH = "/api/chat"
GENERATE_PATH = "/api/generate"


def request_body(request: PipelineRequest, model: str) -> tuple[str, dict[str, Any]]:
    body: dict[str, Any] = {"model": model, "stream": True, "options": options(request.params)}
    fmt = format_json(request.output)
    if fmt is not None:
        body["format"] = fmt
    if request.keep_alive is not None:
        body["keep_alive"] = f"{int(request.keep_alive)}s"
    prompt = request.prompt
    if isinstance(prompt, ChatPrompt):
        body["messages"] = messages_json(prompt.messages)
        thinking = prompt.template_kwargs.get("enable_thinking")
        if isinstance(thinking, bool):
            body["think"] = thinking
        tools = prompt.offered_tools()
        if tools:
            body["tools"] = [
                {"type": "function", "function": {"name": t.name, "description": t.description,
                                                  "parameters": t.parameters or {"type": "object"}}}
                for t in tools
            ]  # fmt: skip
        return CHAT_PATH, body
    if isinstance(prompt, TextPrompt):
        body.update(prompt=prompt.text, raw=True)
    elif isinstance(prompt, FillInMiddle):
        body.update(prompt=prompt.prefix, suffix=prompt.suffix)
    else:
        raise InvalidRequestError(
            "An Ollama engine takes text prompts, not token ids.", param="prompt"
        )
    return GENERATE_PATH, body


def options(params: SamplingParams) -> dict[str, Any]:
    out: dict[str, Any] = {
        "temperature": params.temperature,
        "top_p": params.top_p,
        "top_k": params.top_k,
        "min_p": params.min_p,
        "repeat_penalty": params.repeat_penalty,
        "repeat_last_n": params.repeat_last_n,
        "presence_penalty": params.presence_penalty,
        "frequency_penalty": params.frequency_penalty,
        "num_predict": params.max_tokens if params.max_tokens is not None else -1,
    }
    if params.seed is not None:
        out["seed"] = params.seed
    if params.stop:
        out["stop"] = list(params.stop)
    return out


def format_json(output: OutputFormat) -> str | dict[str, Any] | None:
    if output.kind == "json":
        return "json"
    if output.kind == "json_schema" and output.schema is not None:
        return output.schema
    return None


def messages_json(messages: tuple[ChatMessage, ...]) -> list[dict[str, Any]]:
    names: dict[str, str] = {}  # tool call id -> function name, for Ollama's tool_name
    out: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.reasoning:
            item["thinking"] = message.reasoning
        if message.tool_calls:
            item["tool_calls"] = [
                {"function": {"name": c.name, "arguments": _arguments(c.arguments)}}
                for c in message.tool_calls
            ]
            names.update((c.id, c.name) for c in message.tool_calls)
        if message.tool_call_id is not None and message.tool_call_id in names:
            item["tool_name"] = names[message.tool_call_id]
        out.append(item)
    return out


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class NdjsonDecoder:
    """Ollama's stream lines (``/api/chat`` messages or ``/api/generate`` responses);
    the end is the ``"done": true`` line, and a stream without it broke off."""

    terminator = '"done": true'

    def __init__(self) -> None:
        self._calls: list[ToolCall] = []
        self.ended = False

    def feed(self, line: bytes) -> list[WireEvent]:
        """One line of the stream (bytes, without its newline)."""
        chunk = parse_json_line(line)
        if chunk is None or self.ended:
            return []
        if "error" in chunk:
            return [StreamError(str(chunk["error"]))]
        raw = chunk.get("message")
        message: dict[str, Any] = raw if isinstance(raw, dict) else chunk
        events: list[WireEvent] = []
        if message.get("thinking"):
            events.append(ReasoningDelta(str(message["thinking"])))
        text = str(message.get("content") or message.get("response") or "")
        if text:
            events.append(TextDelta(text))
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and function.get("name"):
                call_id = str(call.get("id") or new_call_id())
                arguments = arguments_text(function.get("arguments"))
                self._calls.append(ToolCall(call_id, str(function["name"]), arguments))
        if chunk.get("done"):
            events += self._end(chunk)
        return events

    def _end(self, chunk: dict[str, Any]) -> list[WireEvent]:
        self.ended = True
        events = calls_event(self._calls)
        evals, eval_ns = chunk.get("eval_count") or 0, chunk.get("eval_duration") or 0
        rate = evals / (eval_ns / 1e9) if evals and eval_ns else None
        end = StreamEnd(
            finish_reason(chunk.get("done_reason"), bool(self._calls)),
            prompt_tokens=int(chunk.get("prompt_eval_count") or 0),
            completion_tokens=int(evals),
            decode_tokens_per_s=rate,
        )
        return [*events, end]
