"""A tool-call round trip with the official openai client (grammar-forced on a random model)."""

from __future__ import annotations

import json

import openai
import pytest

from server_process import start_serve

MODEL = "hearth-tiny-Q8_0"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "maxLength": 12},
                    "days": {"type": "integer"},
                },
                "required": ["city", "days"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}},
    },
]


@pytest.fixture(scope="module")
def client(tiny_model_q8, tmp_path_factory):
    """Tool descriptions are long in a byte-level vocabulary: a 2048-token context."""
    server = start_serve(tiny_model_q8, tmp_path_factory.mktemp("tools"), ctx=2048, parallel=2)
    yield openai.OpenAI(base_url=f"{server.base_url}/v1", api_key="unused", max_retries=0)
    server.stop()


def _forced(client, stream: bool):
    return client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Weather in Oslo?"}],
        tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        max_tokens=120,
        temperature=0,
        stream=stream,
    )


def test_forced_tool_call_round_trip(client):
    response = _forced(client, stream=False)
    choice = response.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.function.name == "get_weather"
    args = json.loads(call.function.arguments)
    assert set(args) == {"city", "days"}
    assert isinstance(args["city"], str) and isinstance(args["days"], int)

    follow_up = client.chat.completions.create(
        model=MODEL,
        messages=[
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_call_id": call.id, "content": '{"temp_c": 3}'},
        ],
        tools=TOOLS,
        max_tokens=8,
        temperature=0,
    )
    assert follow_up.choices[0].finish_reason in ("stop", "length")
    # the tool result really reached the prompt: it is longer than the first turn's
    assert follow_up.usage.prompt_tokens > response.usage.prompt_tokens


def test_streamed_tool_call_matches_non_streamed(client):
    whole = _forced(client, stream=False).choices[0].message.tool_calls[0]
    chunks = list(_forced(client, stream=True))
    deltas = [c.choices[0].delta for c in chunks if c.choices and c.choices[0].delta.tool_calls]
    assert len(deltas) == 1
    streamed = deltas[0].tool_calls[0]
    assert streamed.index == 0 and streamed.function.name == "get_weather"
    assert streamed.function.arguments == whole.function.arguments
    reasons = [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ]
    assert reasons == ["tool_calls"]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "<tool_call>" not in text


def test_required_picks_one_of_the_tools(client):
    response = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "anything"}],
        tools=TOOLS,
        tool_choice="required",
        max_tokens=120,
        temperature=0,
    )
    assert response.choices[0].message.tool_calls[0].function.name in ("get_weather", "get_time")


def test_tool_choice_none_and_unknown_tool(client):
    plain = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "hi"}],
        tools=TOOLS,
        tool_choice="none",
        max_tokens=4,
    )
    assert plain.choices[0].message.tool_calls is None
    with pytest.raises(openai.BadRequestError, match="unknown tool"):
        client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "hi"}],
            tools=TOOLS,
            tool_choice={"type": "function", "function": {"name": "launch_rockets"}},
        )


def test_ollama_chat_accepts_tools_and_tool_turns(client):
    import ollama

    host = str(client.base_url).removesuffix("/v1/").removesuffix("/v1")
    ol = ollama.Client(host=host)
    messages = [{"role": "user", "content": "Weather in Oslo?"}]
    plain = ol.chat(model=MODEL, messages=messages, options={"num_predict": 4})
    with_tools = ol.chat(model=MODEL, messages=messages, tools=TOOLS, options={"num_predict": 4})
    assert with_tools.done
    assert with_tools.prompt_eval_count > plain.prompt_eval_count + 50  # tools described
    call = {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
    history = [
        *messages,
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": '{"temp_c": 3}'},
    ]
    after = ol.chat(model=MODEL, messages=history, tools=TOOLS, options={"num_predict": 4})
    assert after.done and after.prompt_eval_count > with_tools.prompt_eval_count
    streamed = list(
        ol.chat(model=MODEL, messages=history, tools=TOOLS, stream=True, options={"num_predict": 4})
    )
    assert streamed[-1].done
