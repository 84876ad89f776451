"""Tool calling: the model's call format, forcing calls with a grammar, parsing them out.

Three families cover most GGUF chat models:
- Hermes / Qwen: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
- Llama 3.x: a bare JSON object ``{"name": ..., "parameters": {...}}``
- Mistral: ``[TOOL_CALLS][{"name": ..., "arguments": {...}}]``
The family is read off the chat template; Hermes is the fallback, and models whose
template knows nothing of tools get the tools described in a system message.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from llama_cpp import llama_grammar

from hearth.core.errors import InvalidRequestError
from hearth.core.generation import ChatMessage, ToolCall, ToolSpec


class ToolFormat(str, Enum):
    HERMES = "hermes"
    LLAMA3 = "llama3"
    MISTRAL = "mistral"


HERMES_OPEN, HERMES_CLOSE = "<tool_call>", "</tool_call>"
MISTRAL_MARK = "[TOOL_CALLS]"
LLAMA3_MARK = "<|python_tag|>"


def detect_format(template: str | None) -> ToolFormat:
    source = template or ""
    if MISTRAL_MARK in source:
        return ToolFormat.MISTRAL
    if HERMES_OPEN in source:
        return ToolFormat.HERMES
    if LLAMA3_MARK in source or "ipython" in source:
        return ToolFormat.LLAMA3
    return ToolFormat.HERMES


def new_call_id() -> str:
    return f"call_{secrets.token_hex(12)}"


def _args_key(fmt: ToolFormat) -> str:
    return "parameters" if fmt is ToolFormat.LLAMA3 else "arguments"


def tools_system_prompt(tools: Sequence[ToolSpec]) -> str:
    """For templates without tool support: describe the tools and the Hermes format."""
    described = "\n".join(
        json.dumps({"type": "function", "function": {
            "name": t.name, "description": t.description, "parameters": t.parameters}})
        for t in tools
    )  # fmt: skip
    return (
        "You can call functions. The available tools are:\n<tools>\n"
        f"{described}\n</tools>\n"
        "To call one, reply with a JSON object inside tags, like this:\n"
        f'{HERMES_OPEN}\n{{"name": "<function name>", "arguments": {{...}}}}\n{HERMES_CLOSE}'
    )


def call_grammar(tools: Sequence[ToolSpec], fmt: ToolFormat, only: str | None = None) -> str:
    """GBNF that forces exactly one call, to ``only`` or to any of ``tools``."""
    chosen = [t for t in tools if only is None or t.name == only]
    if not chosen:
        raise InvalidRequestError(f"tool_choice names an unknown tool: {only}", param="tool_choice")
    key = _args_key(fmt)
    variants = [
        {"type": "object",
         "properties": {"name": {"const": t.name},
                        key: t.parameters or {"type": "object"}},
         "required": ["name", key], "additionalProperties": False}
        for t in chosen
    ]  # fmt: skip
    schema = variants[0] if len(variants) == 1 else {"oneOf": variants}
    try:
        body = llama_grammar.json_schema_to_gbnf(json.dumps(schema), prop_order=["name", key])
    except Exception as exc:
        raise InvalidRequestError(f"A tool's parameters schema is unusable: {exc}",
                                  param="tools") from exc  # fmt: skip
    body = re.sub(r"(?m)^root ::=", "call ::=", str(body))
    if fmt is ToolFormat.HERMES:
        root = f'root ::= "{HERMES_OPEN}\\n" call "\\n{HERMES_CLOSE}"'
    elif fmt is ToolFormat.MISTRAL:
        root = f'root ::= "{MISTRAL_MARK}[" call "]"'
    else:
        root = "root ::= call"
    return root + "\n" + body


@dataclass
class ParsedOutput:
    content: str
    calls: list[ToolCall]


def _to_call(obj: Any, fmt: ToolFormat) -> ToolCall | None:
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None
    args = obj.get(_args_key(fmt), obj.get("arguments", obj.get("parameters", {})))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            return None
    if not isinstance(args, dict):
        return None
    return ToolCall(new_call_id(), obj["name"], json.dumps(args, ensure_ascii=False))


def parse_output(text: str, fmt: ToolFormat) -> ParsedOutput:
    """Split generated text into plain content and tool calls; unparsable calls stay text."""
    if fmt is ToolFormat.HERMES:
        calls, kept, pos = [], [], 0
        for match in re.finditer(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", text, re.S):
            try:
                call = _to_call(json.loads(match.group(1)), fmt)
            except json.JSONDecodeError:
                call = None
            if call is None:
                continue
            kept.append(text[pos : match.start()])
            pos = match.end()
            calls.append(call)
        kept.append(text[pos:])
        return ParsedOutput("".join(kept).strip() if calls else text, calls)
    if fmt is ToolFormat.MISTRAL:
        head, mark, tail = text.partition(MISTRAL_MARK)
        if mark:
            try:
                items = json.loads(tail.strip())
            except json.JSONDecodeError:
                return ParsedOutput(text, [])
            items = items if isinstance(items, list) else [items]
            calls = [c for c in (_to_call(i, fmt) for i in items) if c is not None]
            if calls:
                return ParsedOutput(head.strip(), calls)
        return ParsedOutput(text, [])
    body = text.strip().removeprefix(LLAMA3_MARK).strip()
    if body.startswith("{"):
        try:
            call = _to_call(json.loads(body), fmt)
        except json.JSONDecodeError:
            call = None
        if call is not None:
            return ParsedOutput("", [call])
    return ParsedOutput(text, [])


def call_marker(fmt: ToolFormat) -> str:
    return {ToolFormat.HERMES: HERMES_OPEN, ToolFormat.MISTRAL: MISTRAL_MARK,
            ToolFormat.LLAMA3: "{"}[fmt]  # fmt: skip


class ToolCallFilter:
    """Streams plain content until a tool call begins, then holds the rest to parse."""

    def __init__(self, fmt: ToolFormat) -> None:
        self.fmt = fmt
        self._marker = call_marker(fmt)
        self._held = ""
        self._captured: list[str] | None = None
        self._emitted_any = False

    def feed(self, text: str) -> str:
        if self._captured is not None:
            self._captured.append(text)
            return ""
        buffer = self._held + text
        if self.fmt is ToolFormat.LLAMA3:
            return self._feed_llama3(buffer)
        index = buffer.find(self._marker)
        if index != -1:
            self._captured = [buffer[index:]]
            self._held = ""
            return self._emit(buffer[:index])
        hold = _partial_suffix(buffer, self._marker)
        self._held = buffer[len(buffer) - hold :]
        return self._emit(buffer[: len(buffer) - hold])

    def _feed_llama3(self, buffer: str) -> str:
        """Llama 3 calls are a bare JSON object, so only the start of a reply can be one."""
        if self._emitted_any:
            return self._emit(buffer)
        stripped = buffer.lstrip()
        if not stripped or LLAMA3_MARK.startswith(stripped):
            self._held = buffer
            return ""
        if stripped.startswith(("{", LLAMA3_MARK)):
            self._captured = [buffer]
            self._held = ""
            return ""
        self._held = ""
        return self._emit(buffer)

    def _emit(self, text: str) -> str:
        if text.strip():
            self._emitted_any = True
        return text

    def finish(self) -> ParsedOutput:
        """The calls, and any held text that turned out to be plain content."""
        if self._captured is None:
            held, self._held = self._held, ""
            return ParsedOutput(held, [])
        captured = "".join(self._captured)
        parsed = parse_output(captured, self.fmt)
        return parsed if parsed.calls else ParsedOutput(captured, [])


def _partial_suffix(buffer: str, marker: str) -> int:
    for size in range(min(len(marker) - 1, len(buffer)), 0, -1):
        if buffer.endswith(marker[:size]):
            return size
    return 0


def flatten_for_plain_template(
    messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
) -> list[ChatMessage]:
    """Tool turns as ordinary text, for chat templates that know nothing of tools."""
    out: list[ChatMessage] = []
    for message in messages:
        if message.tool_calls:
            calls = "\n".join(
                f"{HERMES_OPEN}\n"
                + json.dumps({"name": c.name, "arguments": _loads(c.arguments)})
                + f"\n{HERMES_CLOSE}"
                for c in message.tool_calls
            )
            text = f"{message.content}\n{calls}".strip()
            out.append(ChatMessage("assistant", text))
        elif message.role == "tool":
            out.append(ChatMessage("user", f"<tool_response>\n{message.content}\n</tool_response>"))
        else:
            out.append(ChatMessage(message.role, message.content))
    if tools:
        prompt = tools_system_prompt(tools)
        if out and out[0].role == "system":
            out[0] = ChatMessage("system", f"{out[0].content}\n\n{prompt}")
        else:
            out.insert(0, ChatMessage("system", prompt))
    return out


def _loads(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except json.JSONDecodeError:
        return arguments
