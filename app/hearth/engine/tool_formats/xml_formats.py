"""Formats whose calls are XML-like tags with one text value per parameter.

Qwen3-Coder (also Qwen3.5, Nemotron 3): ``<tool_call><function=NAME><parameter=K>V
</parameter></function></tool_call>``; Seed-OSS: the same inside ``<seed:tool_call>``;
GLM-4.5+: ``<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>``;
MiniMax-M2: ``<minimax:tool_call><invoke name="NAME"><parameter name="K">V</parameter>
</invoke></minimax:tool_call>``; DeepSeek V3.2+: the invoke form with a ``|DSML|`` tag
prefix (fullwidth bars) and a ``string="true|false"`` attribute. Values are text; the
tool's schema (when known) says which are numbers, booleans or JSON.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hearth.core.generation import ToolCall
from hearth.engine.tool_formats.base import (
    DSML,
    ParsedOutput,
    Schemas,
    args_from_text,
    joined,
    make_call,
    model_json,
    no_calls,
)

_FUNCTION = re.compile(r"<function=([^>\n]+)>(.*?)(?:</function>|$)", re.S)
_PARAMETER = re.compile(r"<parameter=([^>\n]+)>(.*?)(?:</parameter>|(?=<parameter=)|$)", re.S)
_GLM_ARG = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)(?:</arg_value>|$)", re.S)


def _strip_newline(value: str) -> str:
    """Templates put the value on its own line; that one newline each side is framing."""
    value = value[1:] if value.startswith("\n") else value
    return value[:-1] if value.endswith("\n") else value


def _sections(text: str, open_mark: str, close_mark: str) -> list[tuple[int, int, str]]:
    """(start, end, body) of each ``open ... close`` section; an unclosed last one counts."""
    found, pos = [], 0
    while (start := text.find(open_mark, pos)) != -1:
        body_start = start + len(open_mark)
        close = text.find(close_mark, body_start)
        end = len(text) if close == -1 else close + len(close_mark)
        found.append((start, end, text[body_start : close if close != -1 else len(text)]))
        pos = end
    return found


def _assemble(text: str, sections: list[tuple[int, int, list[ToolCall]]]) -> ParsedOutput:
    kept, pos, calls = [], 0, []
    for start, end, found in sections:
        if not found:
            continue
        kept.append(text[pos:start])
        calls.extend(found)
        pos = end
    if not calls:
        return no_calls(text)
    kept.append(text[pos:])
    return ParsedOutput(joined(kept), calls)


def function_tag_parser(open_mark: str, close_mark: str) -> Any:
    """Qwen3-Coder style ``<function=...>`` calls inside the given wrapper tags."""

    def parse(text: str, schemas: Schemas) -> ParsedOutput:
        sections = []
        for start, end, body in _sections(text, open_mark, close_mark):
            found = []
            for function in _FUNCTION.finditer(body):
                name = function.group(1).strip()
                pairs = [(m.group(1).strip(), _strip_newline(m.group(2)))
                         for m in _PARAMETER.finditer(function.group(2))]  # fmt: skip
                call = make_call(name, args_from_text(name, pairs, schemas))
                if call is not None:
                    found.append(call)
            sections.append((start, end, found))
        return _assemble(text, sections)

    return parse


parse_qwen3_coder = function_tag_parser("<tool_call>", "</tool_call>")
parse_seed_oss = function_tag_parser("<seed:tool_call>", "</seed:tool_call>")


def parse_glm(text: str, schemas: Schemas) -> ParsedOutput:
    sections = []
    for start, end, body in _sections(text, "<tool_call>", "</tool_call>"):
        name = body.split("<arg_key>", 1)[0].strip()
        pairs = [(m.group(1).strip(), m.group(2)) for m in _GLM_ARG.finditer(body)]
        call = make_call(name, args_from_text(name, pairs, schemas)) if name else None
        sections.append((start, end, [call] if call is not None else []))
    return _assemble(text, sections)


def invoke_parser(prefix: str, open_names: tuple[str, ...]) -> Any:
    """MiniMax / DeepSeek-DSML ``<invoke name=...><parameter name=...>`` blocks."""
    invoke = re.compile(
        rf'<{re.escape(prefix)}invoke name="([^"]+)">(.*?)(?:</{re.escape(prefix)}invoke>|$)', re.S
    )
    parameter = re.compile(
        rf'<{re.escape(prefix)}parameter name="([^"]+)"(?: string="(true|false)")?>(.*?)'
        rf"(?:</{re.escape(prefix)}parameter>|$)",
        re.S,
    )

    def parse(text: str, schemas: Schemas) -> ParsedOutput:
        sections = []
        for open_name in open_names:
            open_mark, close_mark = f"<{prefix}{open_name}>", f"</{prefix}{open_name}>"
            for start, end, body in _sections(text, open_mark, close_mark):
                found = []
                for block in invoke.finditer(body):
                    name = block.group(1)
                    args = {}
                    for m in parameter.finditer(block.group(2)):
                        raw = _strip_newline(m.group(3))
                        if m.group(2) == "false":
                            args[m.group(1)] = _json_or_text(raw)
                        elif m.group(2) == "true":
                            args[m.group(1)] = raw
                        else:
                            args.update(args_from_text(name, [(m.group(1), raw)], schemas))
                    call = make_call(name, args)
                    if call is not None:
                        found.append(call)
                sections.append((start, end, found))
        sections.sort(key=lambda s: s[0])
        return _assemble(text, sections)

    return parse


parse_minimax = invoke_parser("", ("minimax:tool_call",))
parse_deepseek_dsml = invoke_parser(DSML, ("function_calls", "tool_calls"))


def _json_or_text(raw: str) -> Any:
    try:
        return model_json(raw)
    except json.JSONDecodeError:
        return raw
