"""Every real template llama.cpp keeps renders byte-identically to transformers.

The oracle below is set up the way transformers' ``apply_chat_template`` sets up Jinja
(written here independently, since transformers itself is heavy and not installed). Each
template renders four conversation shapes; wherever the oracle renders, Hearth's text must
be identical, and wherever the template refuses, Hearth must refuse with a request error.
Without tools Hearth leaves ``tools`` undefined, as llama.cpp does, where transformers
passes None: the texts agree wherever transformers renders, and a template transformers
only ever renders with tools (Hermes' tool_use) must render as llama.cpp renders it.
Templates that know nothing of tools get Hearth's documented flattening (tools described
in a system message), and the oracle is given that same flattened conversation.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from jinja2 import TemplateError, nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

from hearth.core.errors import InvalidRequestError
from hearth.core.generation import ChatMessage, ToolCall, ToolSpec
from hearth.engine.chat_template import ChatTemplate
from hearth.engine.tool_calls import flatten_for_plain_template

BOS, EOS = "<s>", "</s>"
CALL_ID = "a1b2c3d4e"  # Mistral templates insist on nine alphanumerics
WEATHER_PARAMS = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "City name"}},
    "required": ["city"],
}
WEATHER = ToolSpec("get_weather", "Current weather for a city", WEATHER_PARAMS)
WEATHER_DICT = {
    "type": "function",
    "function": {"name": "get_weather", "description": "Current weather for a city",
                 "parameters": WEATHER_PARAMS},
}  # fmt: skip

# Each shape: (Hearth's typed messages, the same conversation as HF dicts, tools?)
SHAPES: dict[str, tuple[list[ChatMessage], list[dict[str, Any]], bool]] = {
    "user": (
        [ChatMessage("user", "What's the weather in Zürich?")],
        [{"role": "user", "content": "What's the weather in Zürich?"}],
        False,
    ),
    "turns": (
        [
            ChatMessage("system", "You are terse."),
            ChatMessage("user", "Hi"),
            ChatMessage("assistant", "Hello! How can I help?"),
            ChatMessage("user", "A joke?"),
        ],
        [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello! How can I help?"},
            {"role": "user", "content": "A joke?"},
        ],
        False,
    ),
    "tools": (
        [ChatMessage("user", "What's the weather in Zürich?")],
        [{"role": "user", "content": "What's the weather in Zürich?"}],
        True,
    ),
    "tool_result": (
        [
            ChatMessage("user", "What's the weather in Zürich?"),
            ChatMessage("assistant", "", (ToolCall(CALL_ID, "get_weather", '{"city": "Zürich"}'),)),
            ChatMessage("tool", '{"temp_c": 21}', tool_call_id=CALL_ID),
        ],
        [
            {"role": "user", "content": "What's the weather in Zürich?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": CALL_ID,
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": {"city": "Zürich"}},
                    }
                ],
            },
            {"role": "tool", "content": '{"temp_c": 21}', "tool_call_id": CALL_ID},
        ],
        True,
    ),
}


class _Generation(Extension):
    tags = {"generation"}

    def parse(self, parser: Any) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller: Any) -> str:
        return str(caller())


def _oracle_env() -> ImmutableSandboxedEnvironment:
    def raise_exception(message: str) -> None:
        raise TemplateError(message)

    def tojson(x: Any, ensure_ascii: bool = False, indent: Any = None,
               separators: Any = None, sort_keys: bool = False) -> str:  # fmt: skip
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)  # fmt: skip

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_Generation, loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
    return env


def oracle_render(
    source: str, messages: Sequence[dict[str, Any]], tools: list[dict[str, Any]] | None,
    *, left_out: bool = False,
) -> str:
    """transformers' render (``tools=None, documents=None`` when there are none), or with
    ``left_out`` llama.cpp's, which leaves them undefined."""
    template = _oracle_env().from_string(source)
    absent = {} if left_out else {"tools": tools, "documents": None}
    return template.render(
        messages=list(messages), **absent,
        add_generation_prompt=True, bos_token=BOS, eos_token=EOS,
    )  # fmt: skip


def _as_dicts(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    return [{"role": m.role, "content": m.content} for m in messages]


# Templates that pipe a lazy Jinja ``map`` into ``tojson``: json.dumps (so transformers)
# refuses the generator, llama.cpp renders it as a list, and so does Hearth.
RENDERS_BEYOND_REFERENCE = frozenset({"llama-cpp-deepseek-r1.jinja"})


def mismatches(source: str, name: str = "") -> list[str]:
    """Each shape where Hearth and the oracle disagree (text, or render vs refusal)."""
    hearth = ChatTemplate(source, bos_token=BOS, eos_token=EOS)
    if hearth.compile_error is not None:
        return [hearth.compile_error]
    problems = []
    for shape, (typed, dicts, with_tools) in SHAPES.items():
        tools = [WEATHER] if with_tools else []
        if hearth.supports_tools:
            ref_messages, ref_tools = dicts, [WEATHER_DICT] if with_tools else None
        else:
            ref_messages, ref_tools = _as_dicts(flatten_for_plain_template(typed, tools)), None
        try:
            expected: str | None = oracle_render(source, ref_messages, ref_tools)
        except Exception:  # the template itself refuses this conversation
            expected = None
        if expected is None and ref_tools is None:
            # transformers only renders a tool_use template with tools; llama.cpp leaves
            # ``tools`` undefined without them, as Hearth does, and that text must match.
            try:
                expected = oracle_render(source, ref_messages, None, left_out=True)
            except Exception:
                expected = None
        try:
            got: str | None = hearth.render(typed, tools=tools)
        except InvalidRequestError as exc:
            got = None
            if expected is not None:
                problems.append(f"[{shape}] Hearth refused: {exc.message}")
            continue
        if expected is None and name in RENDERS_BEYOND_REFERENCE:
            continue
        if got != expected:
            problems.append(f"[{shape}] differs: {got!r:.200} vs {expected!r:.200}")
    return problems


def test_corpus_renders_like_transformers(llama_cpp_templates: Path) -> None:
    files = sorted(llama_cpp_templates.glob("*.jinja"))
    assert len(files) >= 27
    failures = {
        path.name: problems
        for path in files
        if (problems := mismatches(path.read_text(encoding="utf-8"), path.name))
    }
    assert failures == {}


@pytest.mark.parametrize(
    ("name", "kwargs", "needle", "present"),
    [
        ("Qwen-Qwen3-0.6B.jinja", {"enable_thinking": False}, "<think>\n\n</think>", True),
        ("Qwen-Qwen3-0.6B.jinja", {}, "<think>\n\n</think>", False),
        ("openai-gpt-oss-120b.jinja", {"reasoning_effort": "high"}, "Reasoning: high", True),
    ],
)
def test_chat_template_kwargs_reach_the_template(
    llama_cpp_templates: Path, name: str, kwargs: dict[str, object], needle: str, present: bool
) -> None:
    path = llama_cpp_templates / name
    if not path.is_file():
        pytest.skip(f"{name} is not in this llama.cpp's corpus")
    hearth = ChatTemplate(path.read_text(encoding="utf-8"), bos_token=BOS, eos_token=EOS)
    text = hearth.render([ChatMessage("user", "hi")], extra_context=kwargs)
    assert (needle in text) is present
