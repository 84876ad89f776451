"""Tool calling: the model's call format, forcing calls with a grammar, parsing them out.

Each model family writes calls its own way (Hermes/Qwen JSON in ``<tool_call>``, Llama 3
bare JSON, Mistral ``[TOOL_CALLS]``, Qwen3-Coder and Seed-OSS XML, GLM ``<arg_key>``,
MiniMax and DeepSeek-DSML ``<invoke>``, DeepSeek and Kimi special tokens, gpt-oss harmony
channels, Gemma 4 ``<|tool_call>call:``, Phi-4/Granite, LFM2, Command-R, Apriel,
Nemotron). The registry in tool_formats holds each as data plus a small parser; the
family is read off the chat template (or the vocabulary) by ``core/chat_formats``,
Hermes is the fallback, and models whose template knows nothing of tools get the tools
described in a system message.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from hearth.core.generation import ChatMessage, ToolSpec
from hearth.engine import tool_formats
from hearth.engine.tool_formats.base import ParsedOutput, Schemas, ToolFormat, new_call_id
from hearth.engine.tool_formats.grammar import call_grammar
from hearth.engine.tool_formats.json_formats import (
    HERMES_CLOSE,
    HERMES_OPEN,
    LLAMA3_MARK,
    MISTRAL_MARK,
)

__all__ = [
    "HERMES_CLOSE", "HERMES_OPEN", "LLAMA3_MARK", "MISTRAL_MARK", "ParsedOutput",
    "ToolCallFilter", "ToolFormat", "call_grammar", "call_marker", "detect_format",
    "flatten_for_plain_template", "new_call_id", "parse_output", "preserved_tokens",
    "tools_system_prompt",
]  # fmt: skip


def detect_format(template: str | None, vocab: Collection[str] = ()) -> ToolFormat:
    """The call format of a model, from its chat template and, failing that, its vocabulary."""
    return tool_formats.detect(template, vocab)


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


def parse_output(text: str, fmt: ToolFormat, tools: Sequence[ToolSpec] = ()) -> ParsedOutput:
    """Split generated text into content, calls (and any reasoning); bad calls stay text.

    ``tools`` lets formats that write values as text (the XML families) type them.
    """
    return tool_formats.parse(text, fmt, _schemas(tools))


def _schemas(tools: Sequence[ToolSpec]) -> Schemas:
    return {t.name: (t.parameters or {}).get("properties", {}) for t in tools}


def preserved_tokens(fmt: ToolFormat) -> tuple[str, ...]:
    """Special tokens whose text the detokenizer must keep for this format to parse.

    llama.cpp leaves control tokens (``<|channel|>``, Kimi's and DeepSeek's call tokens,
    ``<|tool_call_start|>`` ...) out of the text unless asked; without them no call parses.
    """
    return tool_formats.preserved_tokens(fmt)


def call_marker(fmt: ToolFormat) -> str:
    """The text that opens a call section in this format (the first, when several do)."""
    return tool_formats.spec_for(fmt).markers[0]


class ToolCallFilter:
    """Streams plain content until a tool call begins, then holds the rest to parse."""

    def __init__(self, fmt: ToolFormat, tools: Sequence[ToolSpec] = ()) -> None:
        self.fmt = fmt
        self._markers = tool_formats.spec_for(fmt).markers
        self._tools = tuple(tools)
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
        found = [i for i in (buffer.find(m) for m in self._markers) if i != -1]
        if found:
            index = min(found)
            self._captured = [buffer[index:]]
            self._held = ""
            return self._emit(buffer[:index])
        hold = max(_partial_suffix(buffer, m) for m in self._markers)
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
        return parse_output(captured, self.fmt, self._tools)


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
