"""Gemma 4's tool calls: ``<|tool_call>call:NAME{key:value,...}<tool_call|>``.

The arguments are not JSON: keys are bare, strings are wrapped in ``<|"|>`` tokens
(so they need no escaping), and numbers, ``true``/``false``/``null``, ``[...]`` lists
and ``{k:v}`` maps are written as in JSON. This reads what Gemma 4's template writes
for a call (and what llama.cpp's gemma4 parser accepts); several calls follow one
another. A call that does not read cleanly leaves the whole reply as text.
"""

from __future__ import annotations

import re
from typing import Any

from hearth.core.chat_formats import GEMMA4_CALL
from hearth.engine.tool_formats.base import ParsedOutput, Schemas, joined, make_call, no_calls

GEMMA4_END = "<tool_call|>"
GEMMA4_QUOTE = '<|"|>'
_NAME = re.compile(r"call:([^{<\s]+)\{")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_WORDS = {"true": True, "false": False, "null": None}
_SPACE = " \t\n"


class _MalformedError(ValueError):
    """The text is not a Gemma 4 value where one was expected."""


class _Reader:
    """A cursor over the text that reads one Gemma 4 value at a time."""

    def __init__(self, text: str, pos: int) -> None:
        self.text, self.pos = text, pos

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in _SPACE:
            self.pos += 1

    def take(self, literal: str) -> bool:
        if self.text.startswith(literal, self.pos):
            self.pos += len(literal)
            return True
        return False

    def value(self) -> Any:
        self.skip_space()
        if self.take(GEMMA4_QUOTE):
            end = self.text.find(GEMMA4_QUOTE, self.pos)
            if end == -1:
                raise _MalformedError("an unclosed string")
            found, self.pos = self.text[self.pos : end], end + len(GEMMA4_QUOTE)
            return found
        if self.take("{"):
            return self.members()
        if self.take("["):
            return self.elements()
        for word, meaning in _WORDS.items():
            if self.take(word):
                return meaning
        number = _NUMBER.match(self.text, self.pos)
        if number is None:
            raise _MalformedError(f"no value at {self.pos}")
        self.pos = number.end()
        raw = number.group(0)
        return float(raw) if any(c in raw for c in ".eE") else int(raw)

    def members(self) -> dict[str, Any]:
        """A map's ``key:value`` pairs, after its ``{``, up to and including its ``}``."""
        found: dict[str, Any] = {}
        self.skip_space()
        if self.take("}"):
            return found
        while True:
            self.skip_space()
            colon = self.text.find(":", self.pos)
            key = self.text[self.pos : colon].strip() if colon != -1 else ""
            if not key or "}" in key or "," in key:
                raise _MalformedError(f"no key at {self.pos}")
            self.pos = colon + 1
            found[key] = self.value()
            self.skip_space()
            if self.take("}"):
                return found
            if not self.take(","):
                raise _MalformedError(f"no ',' or '}}' at {self.pos}")

    def elements(self) -> list[Any]:
        found: list[Any] = []
        self.skip_space()
        if self.take("]"):
            return found
        while True:
            found.append(self.value())
            self.skip_space()
            if self.take("]"):
                return found
            if not self.take(","):
                raise _MalformedError(f"no ',' or ']' at {self.pos}")


def parse_gemma4(text: str, _schemas: Schemas) -> ParsedOutput:
    kept, calls, pos = [], [], 0
    while (start := text.find(GEMMA4_CALL, pos)) != -1:
        name = _NAME.match(text, start + len(GEMMA4_CALL))
        if name is None:
            return no_calls(text)
        reader = _Reader(text, name.end())
        try:
            args = reader.members()
        except _MalformedError:
            return no_calls(text)
        call = make_call(name.group(1), args)
        if call is None:
            return no_calls(text)
        reader.skip_space()
        if not reader.take(GEMMA4_END) and reader.pos < len(text.rstrip()):
            return no_calls(text)  # something else where the call should have ended
        kept.append(text[pos:start])
        calls.append(call)
        pos = reader.pos
    if not calls:
        return no_calls(text)
    kept.append(text[pos:])
    return ParsedOutput(joined(kept), calls)
