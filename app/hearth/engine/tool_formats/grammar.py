"""GBNF grammars that force one tool call in a model's own format (``tool_choice``).

JSON-object formats get the tools' parameter schemas exactly. Formats that write the
name outside the arguments get the schema when one tool is possible, else any object.
XML-like formats get the tool's name and parameter names, with free text values.
Keyword formats (LFM2's Python call ``[name(k="v")]``, Gemma 4's ``call:name{k:<|"|>v<|"|>}``)
get each tool's name with its own parameter names, and values in the family's literals.
Each grammar writes the call the way the family's template renders one, so the model
stays in distribution and the family's parser reads it back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from hearth.core.chat_formats import GEMMA4_CALL
from hearth.core.errors import InvalidRequestError
from hearth.core.generation import ToolSpec
from hearth.engine.grammar import relax_upper_bounds, schema_to_gbnf
from hearth.engine.tool_formats.base import DSML, ToolFormat, ds_token
from hearth.engine.tool_formats.gemma4 import GEMMA4_END, GEMMA4_QUOTE
from hearth.engine.tool_formats.json_formats import HERMES_CLOSE, HERMES_OPEN, MISTRAL_MARK
from hearth.engine.tool_formats.token_formats import LFM2_BEGIN, LFM2_END

# Formats whose call is one JSON object holding the name: the grammar is the JSON schema.
_OBJECT_FRAMES: dict[ToolFormat, tuple[str, str]] = {
    ToolFormat.HERMES: (f"{HERMES_OPEN}\n", f"\n{HERMES_CLOSE}"),
    ToolFormat.MISTRAL: (f"{MISTRAL_MARK}[", "]"),
    ToolFormat.LLAMA3: ("", ""),
    ToolFormat.PHI4: ("<|tool_call|>[", "]<|/tool_call|>"),
    ToolFormat.NEMOTRON: ("<TOOLCALL>[", "]</TOOLCALL>"),
    ToolFormat.APRIEL: ("<tool_calls>[", "]</tool_calls>"),
    # Command-R7B's template indents its one-line call objects inside the list.
    ToolFormat.COMMAND_R: ("<|START_ACTION|>[\n    ", "\n]<|END_ACTION|>"),
}
# Formats that write the name outside a JSON argument object: (before name, after name, end).
_NAMED_FRAMES: dict[ToolFormat, tuple[str, str, str]] = {
    ToolFormat.DEEPSEEK: (ds_token("tool_calls_begin") + ds_token("tool_call_begin"),
                          ds_token("tool_sep"),
                          ds_token("tool_call_end") + ds_token("tool_calls_end")),
    ToolFormat.KIMI: ("<|tool_calls_section_begin|><|tool_call_begin|>functions.",
                      ":0<|tool_call_argument_begin|>",
                      "<|tool_call_end|><|tool_calls_section_end|>"),
    ToolFormat.HARMONY: ("<|channel|>commentary to=functions.", " <|constrain|>json<|message|>",
                         "<|call|>"),
}  # fmt: skip


def _lit(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


# Formats with one text value per parameter, as GBNF pieces: (before the name, after the
# name, before a parameter name, after a parameter name, after a value, end).
_TEXT_FRAMES: dict[ToolFormat, tuple[str, str, str, str, str, str]] = {
    ToolFormat.QWEN3_CODER: (_lit("<tool_call>\n<function="), _lit(">\n"), _lit("<parameter="),
                             _lit(">\n"), _lit("\n</parameter>\n"),
                             _lit("</function>\n</tool_call>")),
    ToolFormat.SEED_OSS: (_lit("<seed:tool_call>\n<function="), _lit(">\n"), _lit("<parameter="),
                          _lit(">"), _lit("</parameter>\n"),
                          _lit("</function>\n</seed:tool_call>")),
    # GLM's template puts each tag on its own line; models often leave the newlines out.
    ToolFormat.GLM: (_lit("<tool_call>"), '"\\n"?', _lit("<arg_key>"),
                     _lit("</arg_key>") + ' "\\n"? ' + _lit("<arg_value>"),
                     _lit("</arg_value>") + ' "\\n"?', _lit("</tool_call>")),
    ToolFormat.MINIMAX: (_lit('<minimax:tool_call>\n<invoke name="'), _lit('">\n'),
                         _lit('<parameter name="'), _lit('">'), _lit("</parameter>\n"),
                         _lit("</invoke>\n</minimax:tool_call>")),
    ToolFormat.DEEPSEEK_DSML: (_lit(f'<{DSML}function_calls>\n<{DSML}invoke name="'),
                               _lit('">\n'), _lit(f'<{DSML}parameter name="'),
                               f'{_lit(chr(34) + " string=" + chr(34))} ("true" | "false") '
                               + _lit(chr(34) + ">"),
                               _lit(f"</{DSML}parameter>\n"),
                               _lit(f"</{DSML}invoke>\n</{DSML}function_calls>")),
}  # fmt: skip


def call_grammar(tools: Sequence[ToolSpec], fmt: ToolFormat, only: str | None = None) -> str:
    """GBNF that forces exactly one call, to ``only`` or to any of ``tools``."""
    chosen = [t for t in tools if only is None or t.name == only]
    if not chosen:
        raise InvalidRequestError(f"tool_choice names an unknown tool: {only}", param="tool_choice")
    if fmt in _TEXT_FRAMES:
        return _text_grammar(chosen, _TEXT_FRAMES[fmt])
    if fmt in _KEYWORD_FRAMES:
        return _keyword_grammar(chosen, _KEYWORD_FRAMES[fmt])
    if fmt in _NAMED_FRAMES:
        before, after, end = (_lit(p) for p in _NAMED_FRAMES[fmt])
        args_schema = chosen[0].parameters if len(chosen) == 1 else {}
        body = _schema_rules(args_schema or {"type": "object"}, "args", [])
        root = f"{before} name {after} args {end}"
        if fmt is ToolFormat.DEEPSEEK:  # or R1's: function<sep>NAME, then fenced JSON
            fence, close = _lit("\n```json\n"), _lit("\n```")
            root += f' | {before} "function" {after} name {fence} args {close} {end}'
        return f"root ::= {root}\n{_names_rule(chosen)}\n{body}"
    name_key = "tool_name" if fmt is ToolFormat.COMMAND_R else "name"
    key = "parameters" if fmt in (ToolFormat.LLAMA3, ToolFormat.COMMAND_R) else "arguments"
    # Command-R numbers its calls; the one forced call is the first.
    ids = {"tool_call_id": {"const": "0"}} if fmt is ToolFormat.COMMAND_R else {}
    variants = [
        {"type": "object",
         "properties": {**ids, name_key: {"const": t.name},
                        key: relax_upper_bounds(t.parameters) or {"type": "object"}},
         "required": [*ids, name_key, key], "additionalProperties": False}
        for t in chosen
    ]  # fmt: skip
    schema = variants[0] if len(variants) == 1 else {"oneOf": variants}
    body = _schema_rules(schema, "call", [*ids, name_key, key])
    before, after = _OBJECT_FRAMES.get(fmt, _OBJECT_FRAMES[ToolFormat.HERMES])
    parts = [p for p in (_lit(before) if before else "", "call", _lit(after) if after else "") if p]
    if fmt is ToolFormat.MISTRAL:  # or Mistral Small 3.2's own form: name[ARGS]{json}
        schema = chosen[0].parameters if len(chosen) == 1 else {}
        args = _prefixed(_schema_rules(schema or {"type": "object"}, "args", []), "mx-")
        names = _names_rule(chosen).replace("name ::=", "mistral-fn ::=", 1)
        alternative = f"{_lit(MISTRAL_MARK)} mistral-fn {_lit('[ARGS]')} mx-args"
        return f"root ::= {' '.join(parts)} | {alternative}\n{body}\n{names}\n{args}"
    return f"root ::= {' '.join(parts)}\n{body}"


def _prefixed(rules: str, prefix: str) -> str:
    """GBNF ``rules`` with every rule they define renamed ``prefix + name`` (definitions
    and references; quoted literals and character classes untouched), so two schemas'
    rules (each with its own ``name``, ``space`` ...) can share one grammar."""
    defined = set(re.findall(r"(?m)^([A-Za-z0-9-]+) ::=", rules))
    out: list[str] = []
    i = 0
    while i < len(rules):
        ch = rules[i]
        if ch in '"[':
            close = '"' if ch == '"' else "]"
            j = i + 1
            while j < len(rules) and rules[j] != close:
                j += 2 if rules[j] == "\\" else 1
            out.append(rules[i : j + 1])
            i = j + 1
            continue
        word = re.match(r"[A-Za-z0-9-]+", rules[i:])
        if word:
            name = word.group(0)
            out.append(prefix + name if name in defined else name)
            i += len(name)
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _schema_rules(schema: dict[str, Any], rule: str, order: list[str]) -> str:
    try:
        body = schema_to_gbnf(json.dumps(schema), prop_order=order)
    except Exception as exc:
        raise InvalidRequestError(f"A tool's parameters schema is unusable: {exc}",
                                  param="tools") from exc  # fmt: skip
    return re.sub(r"(?m)^root ::=", f"{rule} ::=", str(body))


def _names_rule(chosen: Sequence[ToolSpec]) -> str:
    return "name ::= " + " | ".join(_lit(t.name) for t in chosen)


def _text_grammar(chosen: Sequence[ToolSpec], frame: tuple[str, ...]) -> str:
    """XML-like formats: the tool's name, then any of its parameters with free text values."""
    before, after, p_before, p_after, v_after, end = frame
    params = sorted({p for t in chosen for p in (t.parameters or {}).get("properties", {})})
    pname = " | ".join(_lit(p) for p in params) if params else "[a-zA-Z0-9_.-]+"
    return (
        f"root ::= {before} name {after} param* {end}\n{_names_rule(chosen)}\n"
        f"param ::= {p_before} pname {p_after} value {v_after}\n"
        f"pname ::= {pname}\n"
        'value ::= ([^<] | "<" [^/])*\n'
    )


# Formats that write a call as the name and keyword arguments: (before the call, after
# it, after the name, between the name and a value, between arguments, after the last,
# the value rule and its GBNF).
_PY_VALUE = r"""py-value ::= py-string | py-number | py-word | py-list | py-dict
py-word ::= "True" | "False" | "None" | "true" | "false" | "null"
py-string ::= "\"" ([^"\\\n] | "\\" [^\n])* "\"" | "'" ([^'\\\n] | "\\" [^\n])* "'"
py-number ::= "-"? [0-9]+ ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
py-list ::= "[" (py-value ("," " "? py-value)*)? "]"
py-dict ::= "{" (py-string ":" " "? py-value ("," " "? py-string ":" " "? py-value)*)? "}"
"""
_Q = _lit(GEMMA4_QUOTE)
_G_CHARS = " | ".join(
    (f"{_lit(GEMMA4_QUOTE[:i])} " if i else "") + f"[^{ch}]" for i, ch in enumerate(GEMMA4_QUOTE)
)
_GEMMA_VALUE = f"""g-value ::= g-string | g-number | "true" | "false" | "null" | g-list | g-dict
g-string ::= {_Q} ({_G_CHARS})* {_Q}
g-number ::= "-"? [0-9]+ ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
g-list ::= "[" (g-value ("," g-value)*)? "]"
g-dict ::= "{{" (g-key ":" g-value ("," g-key ":" g-value)*)? "}}"
g-key ::= [^:}}{{,<]+
"""
_KEYWORD_FRAMES: dict[ToolFormat, tuple[str, str, str, str, str, str, str, str]] = {
    ToolFormat.LFM2: (_lit(f"{LFM2_BEGIN}["), _lit(f"]{LFM2_END}"), '"("', '"="', '"," " "?',
                      '")"', "py-value", _PY_VALUE),
    ToolFormat.GEMMA4: (_lit(f"{GEMMA4_CALL}call:"), _lit(GEMMA4_END), '"{"', '":"', '","',
                        '"}"', "g-value", _GEMMA_VALUE),
}  # fmt: skip


def _keyword_grammar(chosen: Sequence[ToolSpec], frame: tuple[str, ...]) -> str:
    """``name(k=v, ...)``-like calls: each tool with its own parameter names."""
    before, after, opened, assign, sep, closed, value, value_rules = frame
    calls, rules = [], []
    for i, tool in enumerate(chosen):
        params = sorted((tool.parameters or {}).get("properties", {}))
        pname = " | ".join(_lit(p) for p in params) if params else "[a-zA-Z_] [a-zA-Z0-9_]*"
        calls.append(f"call-{i}")
        rules += [f"call-{i} ::= {_lit(tool.name)} {opened} (kv-{i} ({sep} kv-{i})*)? {closed}",
                  f"kv-{i} ::= pname-{i} {assign} {value}", f"pname-{i} ::= {pname}"]  # fmt: skip
    head = f"root ::= {before} ({' | '.join(calls)}) {after}"
    return "\n".join([head, *rules, value_rules])
