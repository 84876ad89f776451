"""Speaking OpenAI to an engine: a pipeline request as a streamed chat or completions
call, and the engine's SSE chunks back as wire events.

Sampling fields beyond OpenAI's own (top_k, min_p, repeat_penalty) are the ones vLLM,
llama-server, SGLang and Hearth all accept; they are sent only when they differ from
"off", so a strict server is not handed knobs the client never turned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
    TokenPrompt,
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

CHAT_PATH = "/v1/chat/completions"
COMPLETIONS_PATH = "/v1/completions"


def request_body(request: PipelineRequest, model: str) -> tuple[str, dict[str, Any]]:
    """The path and JSON body for ``request``, always streamed with usage."""
    body: dict[str, Any] = {"model": model, "stream": True,
                            "stream_options": {"include_usage": True}}  # fmt: skip
    body.update(sampling_fields(request.params))
    body.update(response_format(request.output))
    prompt = request.prompt
    if isinstance(prompt, ChatPrompt):
        body["messages"] = [message_json(m) for m in prompt.messages]
        if prompt.template_kwargs:  # vLLM, SGLang, llama-server and Hearth take these
            body["chat_template_kwargs"] = prompt.template_kwargs
        tools = prompt.offered_tools()
        if tools:
            body["tools"] = [
                {"type": "function", "function": {"name": t.name, "description": t.description,
                                                  "parameters": t.parameters or {"type": "object"}}}
                for t in tools
            ]  # fmt: skip
            body["tool_choice"] = tool_choice_json(prompt)
        return CHAT_PATH, body
    if isinstance(prompt, TextPrompt):
        body["prompt"] = prompt.text
    elif isinstance(prompt, TokenPrompt):
        body["prompt"] = list(prompt.tokens)
    elif isinstance(prompt, FillInMiddle):
        body["prompt"], body["suffix"] = prompt.prefix, prompt.suffix
    else:  # pragma: no cover - the Prompt union is closed
        raise InvalidRequestError("This kind of prompt cannot go to a remote engine.")
    return COMPLETIONS_PATH, body


def sampling_fields(params: SamplingParams) -> dict[str, Any]:
    out: dict[str, Any] = {"temperature": params.temperature, "top_p": params.top_p}
    if params.max_tokens is not None:
        out["max_tokens"] = params.max_tokens
    if params.top_k > 0:
        out["top_k"] = params.top_k
    if params.min_p > 0:
        out["min_p"] = params.min_p
    if params.seed is not None:
        out["seed"] = params.seed
    if params.presence_penalty:
        out["presence_penalty"] = params.presence_penalty
    if params.frequency_penalty:
        out["frequency_penalty"] = params.frequency_penalty
    if params.repeat_penalty != 1.0:
        out["repeat_penalty"] = params.repeat_penalty  # llama-server, Hearth
        out["repetition_penalty"] = params.repeat_penalty  # vLLM, SGLang
    if params.stop:
        out["stop"] = list(params.stop)
    if params.logit_bias:
        out["logit_bias"] = {str(k): v for k, v in params.logit_bias.items()}
    return out


def response_format(output: OutputFormat) -> dict[str, Any]:
    if output.kind == "json":
        return {"response_format": {"type": "json_object"}}
    if output.kind == "json_schema" and output.schema is not None:
        spec = {"name": "output", "schema": output.schema}
        return {"response_format": {"type": "json_schema", "json_schema": spec}}
    return {}


def tool_choice_json(prompt: ChatPrompt) -> str | dict[str, Any]:
    choice = prompt.tool_choice
    if choice.mode == "named" and choice.name:
        return {"type": "function", "function": {"name": choice.name}}
    return choice.mode if choice.mode in ("none", "required") else "auto"


def message_json(message: ChatMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]  # fmt: skip
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.reasoning:
        out["reasoning_content"] = message.reasoning
    return out


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class SseDecoder:
    """OpenAI chat or completions chunks (``data: {...}`` lines) into wire events.

    The finish reason and the usage come in separate chunks (usage last, with no
    choices), so the end is reported at ``[DONE]`` and only there: a stream that closes
    without it was cut off (an engine killed between its last token and ``[DONE]``
    looks, at the HTTP layer, like one that finished), and the backend says so.
    """

    terminator = "data: [DONE]"

    def __init__(self) -> None:
        self._calls: dict[int, _PartialCall] = {}
        self._reason: object = None
        self._stop: str | None = None
        self._usage: dict[str, Any] = {}
        self._rate: float | None = None
        self.ended = False

    def feed(self, line: bytes) -> list[WireEvent]:
        """One line of the stream (bytes, without its newline)."""
        if not line.startswith(b"data:"):
            return []  # blank separators, comments, "event:" lines
        data = line[5:].strip()
        if data == b"[DONE]":
            return self._end()
        chunk = parse_json_line(data)
        if chunk is None:
            return []
        if "error" in chunk:
            return [StreamError(_error_message(chunk["error"]))]
        if isinstance(chunk.get("usage"), dict):
            self._usage = chunk["usage"]
        timings = chunk.get("timings")  # Hearth's and llama-server's own measurements
        if isinstance(timings, dict):
            rate = timings.get("decode_tokens_per_s") or timings.get("predicted_per_second")
            self._rate = float(rate) if isinstance(rate, int | float) and rate > 0 else None
        events: list[WireEvent] = []
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            events += self._choice_events(choice)
            if choice.get("finish_reason"):
                self._reason = choice["finish_reason"]
                stop = choice.get("stop_reason")  # vLLM: the stop string that matched
                self._stop = stop if isinstance(stop, str) else None
        return events

    def _choice_events(self, choice: dict[str, Any]) -> list[WireEvent]:
        if "text" in choice:  # completions
            text = str(choice.get("text") or "")
            return [TextDelta(text)] if text else []
        delta = choice.get("delta") or {}
        if not isinstance(delta, dict):
            return []
        events: list[WireEvent] = []
        thought = delta.get("reasoning_content") or delta.get("reasoning")  # vLLM, llama-server
        if thought:
            events.append(ReasoningDelta(str(thought)))
        if delta.get("content"):
            events.append(TextDelta(str(delta["content"])))
        for call in delta.get("tool_calls") or ():
            if isinstance(call, dict):
                self._call_delta(call)
        return events

    def _call_delta(self, call: dict[str, Any]) -> None:
        index = call.get("index", len(self._calls))
        partial = self._calls.setdefault(int(index), _PartialCall())
        partial.id = partial.id or str(call.get("id") or "")
        function = call.get("function") or {}
        partial.name = partial.name or str(function.get("name") or "")
        if function.get("arguments") is not None:
            partial.arguments.append(arguments_text(function["arguments"]))

    def _end(self) -> list[WireEvent]:
        if self.ended:
            return []
        self.ended = True
        calls = [
            ToolCall(p.id or new_call_id(), p.name, "".join(p.arguments) or "{}")
            for _, p in sorted(self._calls.items())
            if p.name
        ]
        events = calls_event(calls)
        usage = self._usage
        details = usage.get("prompt_tokens_details") or {}
        end = StreamEnd(
            finish_reason(self._reason, bool(calls)),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            cached_tokens=int(details.get("cached_tokens") or 0) if isinstance(details, dict)
            else 0,
            stop_sequence=self._stop,
            decode_tokens_per_s=self._rate,
        )  # fmt: skip
        return [*events, end]


def _error_message(error: object) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)


def error_message(body: bytes) -> str:
    """The message in an engine's error response (OpenAI or plain shapes), bounded."""
    parsed = parse_json_line(body.decode("utf-8", errors="replace"))
    if parsed is not None:
        if "error" in parsed:
            return _error_message(parsed["error"])[:500]
        if "detail" in parsed:  # FastAPI-style (vLLM's older errors)
            return str(parsed["detail"])[:500]
        if "message" in parsed:
            return str(parsed["message"])[:500]
    return body.decode("utf-8", errors="replace").strip()[:500]
