"""The pipeline's dialect-free choices: tool choice and output grammar."""

from __future__ import annotations

import pytest

from hearth.core.errors import InvalidRequestError
from hearth.engine.grammar import JSON_OBJECT_GRAMMAR
from hearth.server.pipeline import OutputFormat, ToolChoice, grammar_for_output


def test_tool_choice_parse() -> None:
    assert ToolChoice.parse(None) == ToolChoice.parse("auto") == ToolChoice()
    assert ToolChoice.parse("none") == ToolChoice("none")
    assert ToolChoice.parse("required") == ToolChoice("required")
    assert ToolChoice.parse({"type": "function"}, "f") == ToolChoice("named", "f")
    for bad, name in (("sometimes", None), ({"type": "function"}, None), ({}, "")):
        with pytest.raises(InvalidRequestError, match="Unsupported tool_choice"):
            ToolChoice.parse(bad, name)


def test_output_grammar() -> None:
    assert grammar_for_output(OutputFormat()) is None
    assert grammar_for_output(OutputFormat("json")) == JSON_OBJECT_GRAMMAR
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    grammar = grammar_for_output(OutputFormat("json_schema", schema))
    assert grammar is not None and "ok" in grammar and grammar != JSON_OBJECT_GRAMMAR
