import json

import pytest

from hearth.core.generation import ChatMessage, ToolCall, ToolSpec
from hearth.engine.tool_calls import (
    ToolCallFilter,
    ToolFormat,
    call_grammar,
    detect_format,
    flatten_for_plain_template,
    parse_output,
)

WEATHER = ToolSpec("get_weather", "Weather for a city",
                   {"type": "object", "properties": {"city": {"type": "string"}},
                    "required": ["city"]})  # fmt: skip


def test_detect_format_from_template():
    assert detect_format("... <tool_call> ...") is ToolFormat.HERMES
    assert detect_format("... [TOOL_CALLS] ...") is ToolFormat.MISTRAL
    assert detect_format("... <|python_tag|> ... ipython") is ToolFormat.LLAMA3
    assert detect_format(None) is ToolFormat.HERMES


def test_parse_hermes_calls_and_keep_text():
    text = (
        'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}'
        '\n</tool_call>\n<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}'
        "</tool_call>"
    )
    parsed = parse_output(text, ToolFormat.HERMES)
    assert parsed.content == "Let me check."
    assert [json.loads(c.arguments)["city"] for c in parsed.calls] == ["Oslo", "Rome"]
    assert all(c.id.startswith("call_") for c in parsed.calls)
    assert len({c.id for c in parsed.calls}) == 2


def test_parse_llama3_and_mistral():
    llama = parse_output(
        '{"name": "get_weather", "parameters": {"city": "Oslo"}}', ToolFormat.LLAMA3
    )
    assert llama.calls[0].name == "get_weather" and llama.content == ""
    mistral = parse_output(
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "X"}}]', ToolFormat.MISTRAL
    )
    assert json.loads(mistral.calls[0].arguments) == {"city": "X"}


def test_broken_calls_stay_text():
    text = "<tool_call>{not json</tool_call>"
    assert parse_output(text, ToolFormat.HERMES).calls == []
    assert parse_output(text, ToolFormat.HERMES).content == text
    assert parse_output("{ plain braces", ToolFormat.LLAMA3).calls == []


def test_filter_streams_text_until_the_marker():
    f = ToolCallFilter(ToolFormat.HERMES)
    out = f.feed("Sure, <tool")
    out += f.feed('_call>{"name": "get_weather", ')
    out += f.feed('"arguments": {"city": "Oslo"}}</tool_call>')
    assert out == "Sure, "
    parsed = f.finish()
    assert parsed.calls[0].name == "get_weather"


def test_filter_releases_false_alarms():
    f = ToolCallFilter(ToolFormat.HERMES)
    assert f.feed("a <tool") == "a "
    assert f.feed("box") == "<toolbox"
    assert f.finish().content == ""
    llama = ToolCallFilter(ToolFormat.LLAMA3)
    assert llama.feed("  ") == ""
    assert llama.feed("Hello {x}") == "  Hello {x}"


def test_call_grammar_names_the_tool():
    grammar = call_grammar([WEATHER], ToolFormat.HERMES)
    assert grammar.startswith('root ::= "<tool_call>\\n" call')
    assert "get_weather" in grammar
    with pytest.raises(Exception, match="unknown tool"):
        call_grammar([WEATHER], ToolFormat.HERMES, only="nope")


def test_flatten_for_plain_templates():
    messages = [
        ChatMessage("user", "weather?"),
        ChatMessage(
            "assistant", "", tool_calls=(ToolCall("c1", "get_weather", '{"city":"Oslo"}'),)
        ),
        ChatMessage("tool", "sunny", tool_call_id="c1"),
    ]
    flat = flatten_for_plain_template(messages, [WEATHER])
    assert flat[0].role == "system" and "get_weather" in flat[0].content
    assert "<tool_call>" in flat[2].content and '"Oslo"' in flat[2].content
    assert flat[3] == ChatMessage("user", "<tool_response>\nsunny\n</tool_response>")
