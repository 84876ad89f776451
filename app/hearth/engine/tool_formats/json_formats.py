"""Formats whose calls are JSON inside marker tokens.

Hermes/Qwen ``<tool_call>{...}</tool_call>``; Llama 3.x bare ``{"name", "parameters"}``;
Mistral ``[TOOL_CALLS][{...}]`` and the newer ``[TOOL_CALLS]name[ARGS]{...}``; Phi-4 and
Granite ``<|tool_call|>[...]``; Nemotron ``<TOOLCALL>[...]</TOOLCALL>``; Apriel
``<tool_calls>[...]</tool_calls>``; Command-R ``<|START_ACTION|>[...]<|END_ACTION|>``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hearth.core.chat_formats import HERMES_CLOSE, HERMES_OPEN, LLAMA3_MARK, MISTRAL_MARK
from hearth.core.generation import ToolCall
from hearth.engine.tool_formats.base import (
    ParsedOutput,
    Schemas,
    decode_json_prefix,
    joined,
    make_call,
    model_json,
    no_calls,
)

__all__ = ["HERMES_CLOSE", "HERMES_OPEN", "LLAMA3_MARK", "MISTRAL_MARK", "call_from_object",
           "json_list_parser", "parse_apriel", "parse_command_r", "parse_hermes",
           "parse_llama3", "parse_mistral", "parse_nemotron", "parse_phi4"]  # fmt: skip


def call_from_object(obj: Any, name_key: str = "name", args_keys: tuple[str, ...] = ()) -> (
    ToolCall | None
):  # fmt: skip
    """A call from ``{"name": ..., "arguments"/"parameters": ...}`` (or a function wrapper)."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):
        obj = obj["function"]
    keys = args_keys or ("arguments", "parameters")
    args: Any = next((obj[k] for k in keys if k in obj), {})
    return make_call(obj.get(name_key), args)


def parse_hermes(text: str, _schemas: Schemas) -> ParsedOutput:
    calls, kept, pos = [], [], 0
    for match in re.finditer(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", text, re.S):
        decoded = decode_json_prefix(match.group(1))
        call = call_from_object(decoded[0]) if decoded else None
        if call is None:
            continue
        kept.append(text[pos : match.start()])
        pos = match.end()
        calls.append(call)
    kept.append(text[pos:])
    return ParsedOutput(joined(kept), calls) if calls else no_calls(text)


def parse_llama3(text: str, _schemas: Schemas) -> ParsedOutput:
    body = text.strip().removeprefix(LLAMA3_MARK).strip()
    if body.startswith("{"):
        try:
            call = call_from_object(model_json(body), args_keys=("parameters", "arguments"))
        except json.JSONDecodeError:
            call = None
        if call is not None:
            return ParsedOutput("", [call])
    return no_calls(text)


def parse_mistral(text: str, _schemas: Schemas) -> ParsedOutput:
    head, mark, tail = text.partition(MISTRAL_MARK)
    if not mark:
        return no_calls(text)
    calls: list[ToolCall] = []
    for section in tail.split(MISTRAL_MARK):
        body = section.strip()
        if body.startswith(("[", "{")):  # the older list-of-objects form
            decoded = decode_json_prefix(body)
            items = decoded[0] if decoded else None
            items = items if isinstance(items, list) else [items]
            found = [c for c in (call_from_object(i) for i in items) if c is not None]
        else:  # name[ARGS]{...}, possibly name[CALL_ID]id[ARGS]{...}
            match = re.match(r"([^\[\s]+)(?:\[CALL_ID\][^\[]*)?\[ARGS\](.*)", body, re.S)
            decoded = decode_json_prefix(match.group(2)) if match else None
            call = make_call(match.group(1), decoded[0]) if match and decoded else None
            found = [call] if call is not None else []
        if not found:
            return no_calls(text)
        calls.extend(found)
    return ParsedOutput(head.strip(), calls)


def json_list_parser(
    open_mark: str, close_mark: str | None, name_key: str = "name",
    args_keys: tuple[str, ...] = (),
) -> Any:  # fmt: skip
    """A parser for ``open [ {call}, ... ] close`` sections (close optional at the end)."""

    def parse(text: str, _schemas: Schemas) -> ParsedOutput:
        calls: list[ToolCall] = []
        kept, pos = [], 0
        while (start := text.find(open_mark, pos)) != -1:
            items, end = _json_values(text, start + len(open_mark))
            found = [call_from_object(i, name_key, args_keys) for i in items]
            if not found or any(c is None for c in found):
                break
            if close_mark and text[end:].lstrip().startswith(close_mark):
                end = text.index(close_mark, end) + len(close_mark)
            kept.append(text[pos:start])
            calls.extend(c for c in found if c is not None)
            pos = end
        if not calls:
            return no_calls(text)
        kept.append(text[pos:])
        return ParsedOutput(joined(kept), calls)

    return parse


def _json_values(text: str, pos: int) -> tuple[list[Any], int]:
    """A JSON list, or objects one after another (MiniMax-M1 writes one per line)."""
    values: list[Any] = []
    while (decoded := decode_json_prefix(text[pos:])) is not None:
        value, length = decoded
        pos += length
        if isinstance(value, list) and not values:
            return value, pos
        values.append(value)
        rest = text[pos:].lstrip()
        if rest.startswith(","):
            pos = text.index(",", pos) + 1
    return values, pos


parse_phi4 = json_list_parser("<|tool_call|>", "<|/tool_call|>")
parse_nemotron = json_list_parser("<TOOLCALL>", "</TOOLCALL>")
parse_apriel = json_list_parser("<tool_calls>", "</tool_calls>")
_parse_action = json_list_parser(
    "<|START_ACTION|>", "<|END_ACTION|>", name_key="tool_name", args_keys=("parameters",)
)


def parse_command_r(text: str, schemas: Schemas) -> ParsedOutput:
    """Command-R7B wraps thinking and the reply in markers; the reply is the content."""
    framed = re.sub(r"<\|(?:START|END)_RESPONSE\|>", "", text)
    thinking = re.search(r"<\|START_THINKING\|>(.*?)(?:<\|END_THINKING\|>|$)", framed, re.S)
    if thinking:
        framed = framed[: thinking.start()] + framed[thinking.end() :]
    parsed = _parse_action(framed, schemas)
    if framed == text and not parsed.calls:
        return no_calls(text)
    reasoning = thinking.group(1).strip() if thinking else ""
    return ParsedOutput(parsed.content.strip(), parsed.calls, reasoning)
