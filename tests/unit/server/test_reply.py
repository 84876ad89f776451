"""A reply taken apart: reasoning, answer and tool calls, the same streamed or whole."""

from __future__ import annotations

import json

import pytest

from hearth.core.generation import ToolSpec
from hearth.engine.reasoning import HARMONY, SPECS
from hearth.engine.tool_calls import ToolFormat
from hearth.server.reply import ReplyShape, marker_texts

THINK = next(spec for spec in SPECS if spec.name == "think")
CITY = {"type": "object", "properties": {"city": {"type": "string"}}}
WEATHER = ToolSpec("get_weather", "", CITY)
QWEN3 = (
    "<think>\nThe user wants the weather.\n</think>\n\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
)
HARMONY_CALL = (
    "<|channel|>analysis<|message|>Need the weather.<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
    '<|message|>{"city": "Paris"}'
)


def _streamed(shape: ReplyShape, text: str, size: int) -> tuple[str, str, list[str]]:
    splitter = shape.splitter()
    reasoning, content = [], []
    for i in range(0, len(text), size):
        part = splitter.feed(text[i : i + size])
        reasoning.append(part.reasoning)
        content.append(part.content)
    end = splitter.finish()
    calls = [f"{c.name}:{json.loads(c.arguments)['city']}" for c in end.calls]
    return "".join(reasoning) + end.reasoning, "".join(content) + end.content, calls


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_think_and_hermes_call_at_every_split(size: int) -> None:
    shape = ReplyShape(THINK, "<|im_start|>assistant\n", ToolFormat.HERMES, (WEATHER,))
    reasoning, content, calls = _streamed(shape, QWEN3, size)
    assert reasoning == "The user wants the weather."  # no whitespace before </think>
    assert content.strip() == ""
    assert calls == ["get_weather:Paris"]


@pytest.mark.parametrize("size", [1, 5, 1000])
def test_harmony_analysis_then_call(size: int) -> None:
    shape = ReplyShape(HARMONY, "<|start|>assistant", ToolFormat.HARMONY, (WEATHER,))
    reasoning, content, calls = _streamed(shape, HARMONY_CALL, size)
    assert reasoning == "Need the weather."
    assert content == ""
    assert calls == ["get_weather:Paris"]


def test_reasoning_opened_by_the_prompt_and_an_answer() -> None:
    shape = ReplyShape(THINK, "Assistant: <think>\n")  # R1 distills open the block
    whole = shape.splitter().whole(["Because.\n", "</think>\n\nIt is ", "sunny."])
    assert (whole.reasoning, whole.content, whole.calls) == ("Because.", "It is sunny.", ())


def test_without_markers_text_passes_through() -> None:
    whole = ReplyShape().splitter().whole(["<think>kept</think>", " as is"])
    assert whole.content == "<think>kept</think> as is" and whole.reasoning == ""


def test_marker_texts_name_what_the_detokenizer_keeps() -> None:
    assert marker_texts(THINK, None) == ("<think>", "</think>")
    harmony = marker_texts(HARMONY, None)
    assert {"<|channel|>", "<|message|>", "<|start|>", "<|end|>"} <= set(harmony)
    assert "[TOOL_CALLS]" in marker_texts(None, ToolFormat.MISTRAL)
    assert marker_texts(None, None) == ()
