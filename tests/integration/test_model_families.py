"""Each model family's tool calls and reasoning, structured, over the HTTP API.

Scripted models (tests/gguf_scripted.py) carry a family's real chat template from
llama.cpp's corpus and "answer" with exactly that family's markup, whatever the prompt.
A real ``hearth serve`` then has to keep the family's control tokens as text, split the
reasoning out and parse the calls: OpenAI ``tool_calls`` and ``reasoning_content``
(streamed and not), and once each the Ollama, Anthropic and Responses shapes.
"""

from __future__ import annotations

import json
import os
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

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
PARIS = {"city": "Paris"}
THINKING = "The user wants the weather."
DS = "\uff5c"  # DeepSeek's fullwidth bar; its spaces are U+2581


def _ds(name: str) -> str:
    return f"<{DS}{name.replace('_', chr(0x2581))}{DS}>"


@dataclass(frozen=True)
class Case:
    """One scripted model: a family's template, its markers, its reply, what it means."""

    id: str
    template: str  # file in llama.cpp's models/templates
    family: Family
    reply: str
    reasoning: str = ""  # the reasoning the reply carries
    content: str = ""  # the answer text left once reasoning and calls are out
    call: bool = True  # the reply calls get_weather(city="Paris")
    kwargs: dict[str, Any] | None = None  # chat_template_kwargs


QWEN3 = Family(user_defined=("<think>", "</think>", "<tool_call>", "</tool_call>"))
HARMONY = Family(
    controls=("<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|end|>",
              "<|return|>", "<|call|>"),
)  # fmt: skip
MISTRAL = Family(controls=("[TOOL_CALLS]", "[ARGS]", "[THINK]", "[/THINK]", "[INST]", "[/INST]"))
DEEPSEEK = Family(
    controls=tuple(_ds(n) for n in ("tool_calls_begin", "tool_calls_end", "tool_call_begin",
                                    "tool_call_end", "tool_sep")),
    user_defined=("<think>", "</think>"),
)  # fmt: skip
KIMI = Family(
    controls=("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>",
              "<|tool_call_argument_begin|>", "<|tool_call_end|>", "<think>", "</think>"),
)  # fmt: skip
GLM = Family(
    controls=("<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>",
              "</arg_value>", "<think>", "</think>"),
)  # fmt: skip
SEED = Family(controls=("<seed:think>", "</seed:think>", "<seed:tool_call>", "</seed:tool_call>"))
MINIMAX = Family(controls=("<minimax:tool_call>", "</minimax:tool_call>", "<think>", "</think>"))
NEMOTRON = Family(controls=("<TOOLCALL>", "</TOOLCALL>", "<think>", "</think>"))
GEMMA4 = Family(controls=("<|channel>", "<channel|>", "<|turn>", "<turn|>", "<|tool_call>",
                          "<tool_call|>"))  # fmt: skip
COMMAND_R = Family(
    controls=("<|START_THINKING|>", "<|END_THINKING|>", "<|START_ACTION|>", "<|END_ACTION|>",
              "<|START_RESPONSE|>", "<|END_RESPONSE|>"),
)  # fmt: skip
CALL_JSON = '{"name": "get_weather", "arguments": {"city": "Paris"}}'

CASES = [
    Case("qwen3", "Qwen-Qwen3-0.6B.jinja", QWEN3,
         f"<think>\n{THINKING}\n</think>\n\n<tool_call>\n{CALL_JSON}\n</tool_call>", THINKING),
    Case("qwen3-answer", "Qwen-Qwen3-0.6B.jinja", QWEN3,
         f"<think>\n{THINKING}\n</think>\n\nIt is sunny.", THINKING, "It is sunny.", call=False),
    Case("qwen3-coder", "Qwen3-Coder.jinja", QWEN3,
         "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
         "</function>\n</tool_call>"),
    Case("hermes-2-pro", "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", QWEN3,
         f"<tool_call>\n{CALL_JSON}\n</tool_call>"),
    Case("mistral-small-3.2", "Mistral-Small-3.2-24B-Instruct-2506.jinja", MISTRAL,
         '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'),
    Case("ministral-reasoning", "mistralai-Ministral-3-14B-Reasoning-2512.jinja", MISTRAL,
         f'[THINK]{THINKING}[/THINK][TOOL_CALLS]get_weather[ARGS]{{"city": "Paris"}}', THINKING),
    Case("deepseek-r1-distill", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", DEEPSEEK,
         f"{THINKING}\n</think>\n\nIt is sunny.", THINKING, "It is sunny.", call=False,
         kwargs={"enable_thinking": True}),
    Case("deepseek-r1", "llama-cpp-deepseek-r1.jinja", DEEPSEEK,
         f"{THINKING}\n</think>\n\n{_ds('tool_calls_begin')}{_ds('tool_call_begin')}function"
         f"{_ds('tool_sep')}get_weather\n```json\n{{\"city\": \"Paris\"}}\n```"
         f"{_ds('tool_call_end')}{_ds('tool_calls_end')}", THINKING),
    Case("gpt-oss", "openai-gpt-oss-120b.jinja", HARMONY,
         '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>'
         '{"city": "Paris"}<|call|>'),
    Case("gpt-oss-analysis", "openai-gpt-oss-120b.jinja", HARMONY,
         f"<|channel|>analysis<|message|>{THINKING}<|end|>", THINKING, call=False),
    Case("glm-4.6", "GLM-4.6.jinja", GLM,
         f"<think>{THINKING}</think><tool_call>get_weather<arg_key>city</arg_key>"
         "<arg_value>Paris</arg_value></tool_call>", THINKING),
    Case("kimi-k2-thinking", "Kimi-K2-Thinking.jinja", KIMI,
         f"<think>{THINKING}</think><|tool_calls_section_begin|><|tool_call_begin|>"
         'functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}'
         "<|tool_call_end|><|tool_calls_section_end|>", THINKING),
    Case("lfm2", "LFM2-8B-A1B.jinja", Family(controls=("<|tool_call_start|>", "<|tool_call_end|>")),
         '<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>'),
    Case("command-r7b", "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", COMMAND_R,
         f"<|START_THINKING|>{THINKING}<|END_THINKING|><|START_ACTION|>[\n"
         '    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}'
         "\n]<|END_ACTION|>", THINKING, kwargs={"enable_thinking": True}),
    Case("seed-oss", "ByteDance-Seed-OSS.jinja", SEED,
         f"<seed:think>{THINKING}</seed:think><seed:tool_call>\n<function=get_weather>\n"
         "<parameter=city>Paris</parameter>\n</function>\n</seed:tool_call>", THINKING),
    Case("minimax-m2", "MiniMax-M2.jinja", MINIMAX,
         f'{THINKING}\n</think>\n\n<minimax:tool_call>\n<invoke name="get_weather">\n'
         '<parameter name="city">Paris</parameter>\n</invoke>\n</minimax:tool_call>', THINKING),
    Case("nemotron-nano-v2", "NVIDIA-Nemotron-Nano-v2.jinja", NEMOTRON,
         f"{THINKING}\n</think><TOOLCALL>[{CALL_JSON}]</TOOLCALL>", THINKING),
    Case("granite-3.3", "ibm-granite-granite-3.3-2B-Instruct.jinja",
         Family(controls=("<|tool_call|>",)), f"<|tool_call|>[{CALL_JSON}]"),
    Case("apriel-1.6", "Apriel-1.6-15b-Thinker-fixed.jinja",
         Family(controls=("<tool_calls>", "</tool_calls>")),
         f"{THINKING}\n[BEGIN FINAL RESPONSE]\n<tool_calls>[{CALL_JSON}]</tool_calls>", THINKING),
    Case("gemma-4", "google-gemma-4-31B-it.jinja", GEMMA4,
         f"<|channel>thought\n{THINKING}<channel|>It is sunny.", THINKING, "It is sunny.",
         call=False, kwargs={"enable_thinking": True}),
    # Its <|"|> string quotes stay one ordinary piece here: a script cannot repeat a token.
    Case("gemma-4-call", "google-gemma-4-31B-it.jinja", GEMMA4,
         f"<|channel>thought\n{THINKING}<channel|><|tool_call>call:get_weather"
         '{city:<|"|>Paris<|"|>}<tool_call|>', THINKING, kwargs={"enable_thinking": True}),
    Case("deepseek-v3.1", "deepseek-ai-DeepSeek-V3.1.jinja", DEEPSEEK,
         f"{THINKING}</think>{_ds('tool_calls_begin')}{_ds('tool_call_begin')}get_weather"
         f'{_ds("tool_sep")}{{"city": "Paris"}}{_ds("tool_call_end")}{_ds("tool_calls_end")}',
         THINKING, kwargs={"thinking": True}),
]  # fmt: skip
BY_ID = {case.id: case for case in CASES}


@pytest.fixture(scope="module")
def families(llama_cpp_templates: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One ``hearth serve`` whose library holds every scripted model; requests name one
    and the server switches to it."""
    from hearth.library.library import Library
    from server_process import start_serve

    root = tmp_path_factory.mktemp("families")
    env = {"HEARTH_DATA_DIR": str(root / "data"), "HEARTH_CONFIG_DIR": str(root / "config")}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        library = Library()
        for case in CASES:
            template = (llama_cpp_templates / case.template).read_text(encoding="utf-8")
            path = write_scripted(root / "models" / f"{case.id}.gguf", template=template,
                                  family=case.family, reply=case.reply, name=case.id)  # fmt: skip
            library.import_in_place(path)
        server = start_serve(None, root, ctx=8192, parallel=1)
    try:
        yield server
    finally:
        server.stop()


def _chat_body(case: Case, *, stream: bool, tools: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"model": case.id, "messages": ASK, "temperature": 0,
                            "max_tokens": 200, "stream": stream}  # fmt: skip
    if tools:
        body["tools"] = [WEATHER]
    if case.kwargs:  # the openai SDK sends what it doesn't know through extra_body
        body["extra_body"] = {"chat_template_kwargs": case.kwargs}
    return body


def _client(server: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.base_url}/v1", api_key="unused", max_retries=0)


def _assert_call(calls: list[tuple[str, str]]) -> None:
    assert len(calls) == 1, calls
    name, arguments = calls[0]
    assert name == "get_weather"
    assert json.loads(arguments) == PARIS


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_openai_chat_structures_the_reply(families: Any, case: Case) -> None:
    response = _client(families).chat.completions.create(**_chat_body(case, stream=False))
    choice = response.choices[0]
    message = choice.message
    assert (getattr(message, "reasoning_content", None) or "") == case.reasoning
    if case.call:
        _assert_call([(c.function.name, c.function.arguments) for c in message.tool_calls or []])
        assert choice.finish_reason == "tool_calls"
        assert not (message.content or "").strip()
    else:
        assert not message.tool_calls
        assert (message.content or "") == case.content
        assert choice.finish_reason == "stop"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_openai_chat_streams_the_reply_structured(families: Any, case: Case) -> None:
    stream = _client(families).chat.completions.create(**_chat_body(case, stream=True))
    reply = collect_chat_stream(stream)
    assert reply.reasoning == case.reasoning
    if case.call:
        _assert_call(reply.calls)
        assert reply.finish == "tool_calls"
        assert not reply.content.strip()
    else:
        assert not reply.calls
        assert reply.content == case.content


def test_reasoning_goes_back_to_the_template(families: Any) -> None:
    """A later turn sends the earlier reasoning back as ``reasoning_content``; Qwen3's
    template keeps it for the turn after the last user message, so the prompt grows."""
    case = BY_ID["qwen3-answer"]
    client = _client(families)

    def prompt_tokens(reasoning: str | None) -> int:
        turn: dict[str, Any] = {"role": "assistant", "content": "It is sunny."}
        if reasoning is not None:
            turn["reasoning_content"] = reasoning
        messages = [*ASK, turn, {"role": "tool", "content": "ok", "tool_call_id": "x"}]
        body = {**_chat_body(case, stream=False, tools=False), "messages": messages}
        response = client.chat.completions.create(**body)
        assert response.usage is not None
        return response.usage.prompt_tokens

    assert prompt_tokens("A long thought " * 10) > prompt_tokens(None)


def test_ollama_thinking_and_tool_calls(families: Any) -> None:
    case = BY_ID["qwen3"]
    body = {"model": case.id, "messages": ASK, "tools": [WEATHER], "stream": False,
            "think": True, "options": {"temperature": 0}}  # fmt: skip
    reply = httpx.post(f"{families.base_url}/api/chat", json=body, timeout=60).json()
    message = reply["message"]
    assert message["thinking"] == THINKING
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["get_weather"]
    assert message["tool_calls"][0]["function"]["arguments"] == PARIS
    lines = []
    with httpx.stream("POST", f"{families.base_url}/api/chat", json={**body, "stream": True},
                      timeout=60) as response:  # fmt: skip
        lines = [json.loads(line) for line in response.iter_lines() if line]
    assert "".join(line["message"].get("thinking", "") for line in lines) == THINKING
    assert any(line["message"].get("tool_calls") for line in lines)


def test_ollama_show_lists_capabilities(families: Any) -> None:
    def show(model: str) -> dict[str, Any]:
        response = httpx.post(f"{families.base_url}/api/show", json={"model": model}, timeout=60)
        return dict(response.json())

    qwen3 = show("qwen3")
    assert {"completion", "tools", "thinking"} <= set(qwen3["capabilities"])
    assert qwen3["details"]["tool_format"] == "hermes"
    assert qwen3["details"]["reasoning_format"] == "think"
    coder = show("qwen3-coder")
    assert "tools" in coder["capabilities"] and "thinking" not in coder["capabilities"]
    assert coder["details"]["tool_format"] == "qwen3_coder"
    gemma = show("gemma-4-call")
    assert {"completion", "tools", "thinking"} <= set(gemma["capabilities"])
    assert gemma["details"]["tool_format"] == "gemma4"
    assert gemma["details"]["reasoning_format"] == "gemma4"


def test_anthropic_thinking_block_and_tool_use(families: Any) -> None:
    client = anthropic.Anthropic(base_url=families.base_url, api_key="unused", max_retries=0)
    tool = {"name": "get_weather", "description": "The weather in a city",
            "input_schema": WEATHER["function"]["parameters"]}  # fmt: skip
    args: dict[str, Any] = {"model": "qwen3", "max_tokens": 200, "messages": ASK,
                            "tools": [tool], "extra_body": {"temperature": 0},
                            "thinking": {"type": "enabled", "budget_tokens": 1024}}  # fmt: skip
    message = client.messages.create(**args)
    kinds = [block.type for block in message.content]
    assert kinds == ["thinking", "tool_use"]
    assert message.content[0].thinking == THINKING  # type: ignore[union-attr]
    assert message.content[1].input == PARIS  # type: ignore[union-attr]
    assert message.stop_reason == "tool_use"
    with client.messages.stream(**args) as stream:
        events = [event.type for event in stream]
        final = stream.get_final_message()
    assert "thinking" in [b.type for b in final.content]
    assert final.content[0].thinking == THINKING  # type: ignore[union-attr]
    assert final.content[-1].input == PARIS  # type: ignore[union-attr]
    assert events.count("content_block_start") == 2


def test_responses_reasoning_item_and_function_call(families: Any) -> None:
    client = _client(families)
    tool = {"type": "function", "name": "get_weather", **{
        k: v for k, v in WEATHER["function"].items() if k != "name"}}  # fmt: skip
    response = client.responses.create(model="qwen3", input="Weather in Paris?", tools=[tool],
                                       temperature=0)  # type: ignore[arg-type]  # fmt: skip
    kinds = [item.type for item in response.output]
    assert kinds[0] == "reasoning" and "function_call" in kinds
    reasoning = response.output[0]
    assert reasoning.content[0].text == THINKING  # type: ignore[union-attr, index]
    call = next(item for item in response.output if item.type == "function_call")
    assert json.loads(call.arguments) == PARIS  # type: ignore[union-attr]
    with client.responses.stream(model="qwen3", input="Weather in Paris?", tools=[tool],  # type: ignore[arg-type]
                                 temperature=0) as stream:  # fmt: skip
        deltas = [e.delta for e in stream if e.type == "response.reasoning_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == THINKING
    assert final.output[0].type == "reasoning"


def test_answers_after_a_family_switch_without_tools(families: Any) -> None:
    """Without tools, markers of the call syntax are not kept, but reasoning still is."""
    case = BY_ID["qwen3-answer"]
    response = _client(families).chat.completions.create(
        **_chat_body(case, stream=False, tools=False)
    )
    message = response.choices[0].message
    assert getattr(message, "reasoning_content", None) == THINKING
    assert message.content == "It is sunny."


if os.environ.get("HEARTH_FAMILIES_REPORT"):  # the before/after table for the issue note

    def test_print_family_table(families: Any) -> None:
        client = _client(families)
        for case in CASES:
            try:
                r = client.chat.completions.create(**_chat_body(case, stream=False)).choices[0]
                calls = bool(r.message.tool_calls)
                thought = getattr(r.message, "reasoning_content", None) == case.reasoning
            except openai.APIError as exc:
                calls, thought = False, False
                print(case.id, exc)
            print(f"| {case.id} | {calls if case.call else '-'} | "
                  f"{thought if case.reasoning else '-'} |")  # fmt: skip


# Every family's scripted call is written the way its template renders one, which is
# what the forced grammar writes (LFM2's Python call, Command-R's indented action, GLM's
# tags with or without newlines), so each comes back structured under the grammar too.
FORCED = [c.id for c in CASES if c.call]


@pytest.mark.parametrize("model", FORCED)
def test_a_required_call_is_forced_in_the_family_syntax(families: Any, model: str) -> None:
    """tool_choice "required" is a grammar in the family's own syntax, control tokens
    included; the scripted call fits it, so it comes back structured."""
    body = {**_chat_body(BY_ID[model], stream=False), "tool_choice": "required"}
    message = _client(families).chat.completions.create(**body).choices[0].message
    _assert_call([(c.function.name, c.function.arguments) for c in message.tool_calls or []])
