"""Formats framed by dedicated special tokens, one call per token-delimited block.

DeepSeek V3/R1: ``<|tool calls begin|><|tool call begin|>NAME<|tool sep|>{json}
<|tool call end|>...`` (fullwidth bars; R1 writes ``function<|tool sep|>NAME`` and then a
fenced json block);
Kimi K2: ``<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0
<|tool_call_argument_begin|>{json}<|tool_call_end|>...``; LFM2: ``<|tool_call_start|>
[name(arg="v"), ...]<|tool_call_end|>`` (Python call syntax, or a JSON list);
gpt-oss harmony: channels, where ``commentary to=functions.NAME`` messages are calls.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from hearth.core.generation import ToolCall
from hearth.engine.tool_formats.base import (
    ParsedOutput,
    Schemas,
    decode_json_prefix,
    ds_token,
    joined,
    make_call,
    no_calls,
)
from hearth.engine.tool_formats.json_formats import call_from_object

DS_CALLS_BEGIN, DS_CALLS_END = ds_token("tool_calls_begin"), ds_token("tool_calls_end")
DS_CALL = re.compile(
    f"{re.escape(ds_token('tool_call_begin'))}(.*?){re.escape(ds_token('tool_sep'))}(.*?)"
    f"(?:{re.escape(ds_token('tool_call_end'))}|$)",
    re.S,
)
KIMI_BEGIN, KIMI_END = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
KIMI_CALL = re.compile(
    r"<\|tool_call_begin\|>\s*(.*?)\s*<\|tool_call_argument_begin\|>(.*?)(?:<\|tool_call_end\|>|$)",
    re.S,
)
LFM2_BEGIN, LFM2_END = "<|tool_call_start|>", "<|tool_call_end|>"


def _block_parser(begin: str, end: str, call_re: re.Pattern[str], build: Any) -> Any:
    """Calls between ``begin`` and ``end``; the section may also start at a first call."""

    def parse(text: str, _schemas: Schemas) -> ParsedOutput:
        start = text.find(begin)
        first = call_re.search(text)
        if start == -1 and first is None:
            return no_calls(text)
        if start == -1 or (first is not None and first.start() < start):
            start = first.start() if first is not None else start
        close = text.find(end, start)
        stop = len(text) if close == -1 else close + len(end)
        calls = [build(m) for m in call_re.finditer(text[start:stop])]
        if not calls or any(c is None for c in calls):
            return no_calls(text)
        return ParsedOutput(joined([text[:start], text[stop:]]), calls)

    return parse


def _deepseek_call(match: re.Match[str]) -> ToolCall | None:
    left, right = match.group(1).strip(), match.group(2)
    fenced = re.match(r"\s*([^\n`]+?)\s*```(?:json)?\s*(.*?)\s*```", right, re.S)
    if fenced:  # R1: function<|tool sep|>NAME\n```json\n{...}\n```
        return make_call(fenced.group(1), fenced.group(2))
    decoded = decode_json_prefix(right)
    return make_call(left, decoded[0]) if decoded else None


def _kimi_call(match: re.Match[str]) -> ToolCall | None:
    ident = match.group(1)  # functions.NAME:INDEX
    name = ident.removeprefix("functions.").rsplit(":", 1)[0]
    decoded = decode_json_prefix(match.group(2))
    return make_call(name, decoded[0]) if decoded else None


parse_deepseek = _block_parser(DS_CALLS_BEGIN, DS_CALLS_END, DS_CALL, _deepseek_call)
parse_kimi = _block_parser(KIMI_BEGIN, KIMI_END, KIMI_CALL, _kimi_call)


def parse_lfm2(text: str, _schemas: Schemas) -> ParsedOutput:
    kept, calls, pos = [], [], 0
    while (start := text.find(LFM2_BEGIN, pos)) != -1:
        close = text.find(LFM2_END, start)
        stop = len(text) if close == -1 else close + len(LFM2_END)
        body = text[start + len(LFM2_BEGIN) : close if close != -1 else len(text)].strip()
        found = _pythonic_calls(body) if not body.startswith(("[{", "{")) else _json_calls(body)
        if not found:
            return no_calls(text)
        kept.append(text[pos:start])
        calls.extend(found)
        pos = stop
    if not calls:
        return no_calls(text)
    kept.append(text[pos:])
    return ParsedOutput(joined(kept), calls)


def _json_calls(body: str) -> list[ToolCall]:
    decoded = decode_json_prefix(body)
    items = decoded[0] if decoded else None
    found = [call_from_object(i) for i in (items if isinstance(items, list) else [items])]
    return [c for c in found if c is not None] if all(found) else []


def _pythonic_calls(body: str) -> list[ToolCall]:
    """``[f(a=1, b="x"), g()]``: parsed as Python literals only, never evaluated."""
    try:
        tree = ast.parse(body if body.startswith("[") else f"[{body}]", mode="eval").body
    except SyntaxError:
        return []
    if not isinstance(tree, ast.List):
        return []
    calls = []
    for node in tree.elts:
        if not isinstance(node, ast.Call) or node.args:
            return []
        name = _dotted_name(node.func)
        try:
            args = {kw.arg: ast.literal_eval(_json_words(kw.value))
                    for kw in node.keywords if kw.arg}  # fmt: skip
        except ValueError:
            return []
        call = make_call(name, args) if name else None
        if call is None:
            return []
        calls.append(call)
    return calls


_JSON_WORDS = {"true": True, "false": False, "null": None}


def _json_words(node: ast.expr) -> ast.expr:
    """LFM2.5's template writes map values as JSON, so ``true``/``false``/``null`` may
    appear among the Python literals; they become constants (still never evaluated)."""

    class Words(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name) -> ast.AST:
            if name.id in _JSON_WORDS:
                return ast.copy_location(ast.Constant(_JSON_WORDS[name.id]), name)
            return name

    return Words().visit(node)  # type: ignore[no-any-return]


def _dotted_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted_name(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


_HARMONY_MESSAGE = re.compile(
    r"(?:<\|start\|>)?([^<]*?)<\|channel\|>([^<]*?)(?:<\|constrain\|>[^<]*)?<\|message\|>"
    r"(.*?)(?=<\|end\|>|<\|call\|>|<\|return\|>|<\|start\|>|$)",
    re.S,
)


def parse_harmony(text: str, _schemas: Schemas) -> ParsedOutput:
    """gpt-oss: ``analysis`` is reasoning, ``final`` the reply, ``to=functions.X`` a call."""
    if "<|channel|>" not in text:
        return no_calls(text)
    content, reasoning, calls = [], [], []
    for match in _HARMONY_MESSAGE.finditer(text):
        header = f"{match.group(1)} {match.group(2)}"
        channel = match.group(2).split()[0] if match.group(2).split() else ""
        body = match.group(3)
        recipient = re.search(r"to=functions\.([^\s<]+)", header)
        if recipient:
            decoded = decode_json_prefix(body)
            if decoded is None and body.strip():
                return no_calls(text)
            call = make_call(recipient.group(1), decoded[0] if decoded else None)
            if call is None:
                return no_calls(text)
            calls.append(call)
        elif channel == "analysis":
            reasoning.append(body)
        else:
            content.append(body)
    return ParsedOutput(joined(content), calls, joined(reasoning))
