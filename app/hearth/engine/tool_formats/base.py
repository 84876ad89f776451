"""What every tool-call format shares: its name, the parsed result, building calls.

A format is data (the markers that open a call section) plus one small parser from
generated text to calls; the signs that identify it in a template are in
``core/chat_formats.py``. Parsers never raise on model output: text that does not
parse stays plain content.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hearth.core.chat_formats import DS_BAR, DS_SPACE, DSML, ToolFormat, ds_token
from hearth.core.generation import ToolCall

__all__ = [
    "DSML", "DS_BAR", "DS_SPACE", "FormatSpec", "ParsedOutput", "Schemas", "ToolFormat",
    "args_from_text", "decode_json_prefix", "ds_token", "joined", "make_call", "model_json",
    "new_call_id", "no_calls", "typed_value",
]  # fmt: skip


@dataclass
class ParsedOutput:
    content: str
    calls: list[ToolCall]
    reasoning: str = ""


# Per tool name, its JSON-schema ``properties``: lets text-valued formats type their values.
Schemas = Mapping[str, Mapping[str, Any]]
Parser = Callable[[str, Schemas], ParsedOutput]


@dataclass(frozen=True)
class FormatSpec:
    """One model family's call format, as data plus its parser (what identifies the
    format in a template is ``core.chat_formats.SIGNS``, shared with the GUI)."""

    fmt: ToolFormat
    markers: tuple[str, ...]  # text that opens a call section (the streaming filter cuts there)
    parse: Parser


# Models write raw tabs and newlines inside JSON strings (a code argument, mostly); strict
# JSON refuses them and the call would fall back to text, so calls are read leniently.
# What a call's arguments become is re-encoded (json.dumps), so clients get valid JSON.
_MODEL_JSON = json.JSONDecoder(strict=False)


def model_json(text: str) -> Any:
    """``json.loads`` as a model's JSON needs it: control characters allowed in strings."""
    return _MODEL_JSON.decode(text)


def new_call_id() -> str:
    return f"call_{secrets.token_hex(12)}"


def make_call(name: object, args: object) -> ToolCall | None:
    """A call from a name and a mapping of arguments (or JSON text of one); else None."""
    if not isinstance(name, str) or not name.strip():
        return None
    if isinstance(args, str):
        try:
            args = model_json(args) if args.strip() else {}
        except json.JSONDecodeError:
            return None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return None
    return ToolCall(new_call_id(), name.strip(), json.dumps(args, ensure_ascii=False))


def typed_value(raw: str, schema: Mapping[str, Any] | None) -> Any:
    """A parameter written as text, typed by its schema (or by its look when unknown)."""
    kind = schema.get("type") if schema else None
    if kind == "string" or (isinstance(kind, list) and "string" in kind and len(kind) == 1):
        return raw
    try:
        value = model_json(raw)
    except json.JSONDecodeError:
        return raw
    if kind is None and not isinstance(value, (dict, list)) and not _looks_scalar(raw):
        return raw
    return value


def _looks_scalar(raw: str) -> bool:
    text = raw.strip()
    return text in ("true", "false", "null") or text[:1] in "-0123456789"


def args_from_text(name: str, pairs: list[tuple[str, str]], schemas: Schemas) -> dict[str, Any]:
    properties = schemas.get(name, {})
    return {key: typed_value(value, properties.get(key)) for key, value in pairs}


def decode_json_prefix(text: str) -> tuple[Any, int] | None:
    """The JSON value at the start of ``text`` (after spaces) and where it ends."""
    stripped = len(text) - len(text.lstrip())
    try:
        value, end = _MODEL_JSON.raw_decode(text, stripped)
    except json.JSONDecodeError:
        return None
    return value, end


def no_calls(text: str) -> ParsedOutput:
    return ParsedOutput(text, [])


def joined(kept: list[str]) -> str:
    return "".join(kept).strip()
