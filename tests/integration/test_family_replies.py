"""What real templates and real replies broke (issue 21): each on a scripted model behind
a real ``hearth serve``, through the official clients.

- llama.cpp's Phi-4-mini template and Hermes 3's ``tool_use`` template loop over
  ``tools`` unguarded: a plain chat (no tools) must render, not 400;
- gpt-oss's analysis message followed by its final one: reasoning in every dialect, and
  an earlier turn's analysis back in its template (which reads ``thinking``);
- Apriel 1.5 writes its own reasoning lead and closes the answer with a marker;
- a model that writes a raw tab or newline inside a call's JSON string gets its call.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from chat_streams import collect_chat_stream
from gguf_scripted import Family, write_scripted
from llama_cpp_templates import PHI4_MINI, template_text

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
THINKING = "The user wants the weather."
ANSWER = "It is sunny."
HARMONY = Family(
    controls=("<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|end|>",
              "<|return|>", "<|call|>"),
)  # fmt: skip
APRIEL = Family(user_defined=("[BEGIN FINAL RESPONSE]", "[END FINAL RESPONSE]"),
                controls=("<tool_calls>", "</tool_calls>"))  # fmt: skip
HERMES = Family(user_defined=("<tool_call>", "</tool_call>"))
RAW_CITY = "Par\tis\nFrance"  # what the model writes raw inside the JSON string
# A script may not hold a lone "\n" piece (the prompt's last token may be that very token).


@dataclass(frozen=True)
class Model:
    template: str  # file in llama.cpp's models/templates (or its stand-in)
    family: Family
    reply: str


MODELS = {
    "phi-4-mini": Model(PHI4_MINI, Family(controls=("<|tool_call|>", "<|/tool_call|>")), ANSWER),
    "hermes-3": Model("NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", HERMES, ANSWER),
    "gpt-oss": Model("openai-gpt-oss-120b.jinja", HARMONY,
                     f"<|channel|>analysis<|message|>{THINKING}<|end|><|start|>assistant"
                     f"<|channel|>final<|message|>{ANSWER}"),
    "apriel-1.5": Model("unsloth-Apriel-1.5.jinja", APRIEL,
                        f"Here are my reasoning steps:\n{THINKING}\n[BEGIN FINAL RESPONSE]\n"
                        f"{ANSWER}\n[END FINAL RESPONSE]"),
    "apriel-1.5-call": Model("unsloth-Apriel-1.5.jinja", APRIEL,
                             f"Here are my reasoning steps:\n{THINKING}\n[BEGIN FINAL RESPONSE]"
                             '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]'
                             "</tool_calls>[END FINAL RESPONSE]"),
    "hermes-raw": Model("Qwen-Qwen3-0.6B.jinja", HERMES,
                        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "'
                        f'{RAW_CITY}"}}}}\n</tool_call>'),
}  # fmt: skip


@pytest.fixture(scope="module")
def server(llama_cpp_templates: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One ``hearth serve`` whose library holds every model here."""
    from hearth.library.library import Library
    from server_process import start_serve

    root = tmp_path_factory.mktemp("family-replies")
    env = {"HEARTH_DATA_DIR": str(root / "data"), "HEARTH_CONFIG_DIR": str(root / "config")}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        library = Library()
        for name, model in MODELS.items():
            template = template_text(llama_cpp_templates, model.template)
            path = write_scripted(root / "models" / f"{name}.gguf", template=template,
                                  family=model.family, reply=model.reply, name=name)  # fmt: skip
            library.import_in_place(path)
        serve = start_serve(None, root, ctx=4096, parallel=1)
    try:
        yield serve
    finally:
        serve.stop()


def _openai(server: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.base_url}/v1", api_key="unused", max_retries=0)


def _chat(server: Any, model: str, *, stream: bool, tools: bool = False) -> dict[str, str]:
    """The reply's reasoning, content and calls (name and arguments), streamed or not."""
    extra: dict[str, Any] = {"tools": [WEATHER]} if tools else {}
    reply = _openai(server).chat.completions.create(
        model=model, messages=ASK, temperature=0, max_tokens=120, stream=stream, **extra
    )
    if not stream:
        message = reply.choices[0].message
        calls = [(c.function.name, c.function.arguments) for c in message.tool_calls or []]
        return {"reasoning": getattr(message, "reasoning_content", None) or "",
                "content": message.content or "", "calls": json.dumps(calls)}  # fmt: skip
    streamed = collect_chat_stream(reply)
    return {"reasoning": streamed.reasoning, "content": streamed.content,
            "calls": json.dumps(streamed.calls)}  # fmt: skip


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("model", ["phi-4-mini", "hermes-3"])
def test_a_template_that_loops_over_tools_renders_a_plain_chat(
    server: Any, model: str, stream: bool
) -> None:
    """Was a 400: "TypeError: 'NoneType' object is not iterable" for every plain chat."""
    reply = _chat(server, model, stream=stream)
    assert reply == {"reasoning": "", "content": ANSWER, "calls": "[]"}
    with_tools = _chat(server, model, stream=stream, tools=True)
    assert with_tools["content"] == ANSWER


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_gpt_oss_analysis_is_openai_reasoning(server: Any, stream: bool) -> None:
    for tools in (False, True):
        reply = _chat(server, "gpt-oss", stream=stream, tools=tools)
        assert reply == {"reasoning": THINKING, "content": ANSWER, "calls": "[]"}


def test_gpt_oss_analysis_goes_back_to_its_template(server: Any) -> None:
    """An earlier call's analysis, sent back as ``reasoning_content``, reaches gpt-oss's
    template (which reads ``thinking``), so the prompt grows by it."""

    def prompt_tokens(reasoning: str | None) -> int:
        call = {"id": "c1", "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}  # fmt: skip
        turn: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        if reasoning is not None:
            turn["reasoning_content"] = reasoning
        messages = [*ASK, turn, {"role": "tool", "content": "sunny", "tool_call_id": "c1"}]
        reply = _openai(server).chat.completions.create(
            model="gpt-oss", messages=messages, tools=[WEATHER], max_tokens=1
        )
        assert reply.usage is not None
        return reply.usage.prompt_tokens

    assert prompt_tokens(THINKING * 4) > prompt_tokens(None) + 20


def test_gpt_oss_analysis_is_an_anthropic_thinking_block(server: Any) -> None:
    client = anthropic.Anthropic(base_url=server.base_url, api_key="unused", max_retries=0)
    args: dict[str, Any] = {"model": "gpt-oss", "max_tokens": 120, "messages": ASK,
                            "thinking": {"type": "enabled", "budget_tokens": 1024}}  # fmt: skip
    message = client.messages.create(**args)
    blocks = [(b.type, getattr(b, "thinking", None) or getattr(b, "text", None))
              for b in message.content]  # fmt: skip
    assert blocks == [("thinking", THINKING), ("text", ANSWER)]
    with client.messages.stream(**args) as stream:
        deltas = [e.delta.type for e in stream if e.type == "content_block_delta"]
        final = stream.get_final_message()
    assert [(b.type, getattr(b, "thinking", None) or getattr(b, "text", None))
            for b in final.content] == blocks  # fmt: skip
    assert "thinking_delta" in deltas and "text_delta" in deltas


def test_gpt_oss_analysis_is_ollama_thinking(server: Any) -> None:
    body = {"model": "gpt-oss", "messages": ASK, "stream": False, "think": True,
            "options": {"temperature": 0}}  # fmt: skip
    message = httpx.post(f"{server.base_url}/api/chat", json=body, timeout=60).json()["message"]
    assert (message.get("thinking"), message["content"]) == (THINKING, ANSWER)
    with httpx.stream("POST", f"{server.base_url}/api/chat", json={**body, "stream": True},
                      timeout=60) as response:  # fmt: skip
        lines = [json.loads(line)["message"] for line in response.iter_lines() if line]
    thinking = "".join(line.get("thinking", "") for line in lines)
    assert (thinking, "".join(line["content"] for line in lines)) == (THINKING, ANSWER)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_apriel_1_5_markers_stay_out_of_the_reply(server: Any, stream: bool) -> None:
    """Its end marker leaked into every reply; its lead opened the reasoning."""
    reply = _chat(server, "apriel-1.5", stream=stream)
    assert reply == {"reasoning": THINKING, "content": ANSWER, "calls": "[]"}
    called = _chat(server, "apriel-1.5-call", stream=stream, tools=True)
    assert (called["reasoning"], called["content"].strip()) == (THINKING, "")
    assert [(n, json.loads(a)) for n, a in json.loads(called["calls"])] == [
        ("get_weather", {"city": "Paris"})
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_call_with_a_raw_tab_and_newline_in_its_json_is_a_call(server: Any, stream: bool) -> None:
    """Strict JSON refused it and the reply came back as text."""
    reply = _chat(server, "hermes-raw", stream=stream, tools=True)
    assert reply["content"].strip() == ""
    assert [(n, json.loads(a)) for n, a in json.loads(reply["calls"])] == [
        ("get_weather", {"city": RAW_CITY})
    ]
