"""Anthropic Messages against a real ``hearth serve``, driven by the official anthropic SDK.

The model is a tiny random one, so these tests check structure, stop reasons, usage and
errors, and that greedy text is the same through every dialect, never what it says.
"""

from __future__ import annotations

import anthropic
import httpx
import openai
import pytest

from server_process import ServeProcess, start_serve

MODEL = "hearth-tiny-Q8_0"
KEY = "hk-anthropic-test-key-0123456789"
WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 12}, "days": {"type": "integer"}},
        "required": ["city", "days"],
        "additionalProperties": False,
    },
}
TIME = {"name": "get_time", "input_schema": {"type": "object", "properties": {}}}
HELLO = [{"role": "user", "content": "Hello there"}]
# This SDK no longer names temperature (Anthropic's newest models ignore it); the API takes it.
GREEDY = {"temperature": 0}


@pytest.fixture(scope="module")
def server(tiny_model_q8, tmp_path_factory):
    """Tool descriptions are long in a byte-level vocabulary: a 2048-token context."""
    served = start_serve(
        tiny_model_q8, tmp_path_factory.mktemp("anthropic"), api_key=KEY, ctx=2048, parallel=2
    )
    yield served
    served.stop()


@pytest.fixture(scope="module")
def client(server: ServeProcess) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.base_url, api_key=KEY, max_retries=0)


def test_create_returns_a_message_with_usage(client: anthropic.Anthropic) -> None:
    message = client.messages.create(model=MODEL, max_tokens=6, messages=HELLO, extra_body=GREEDY)
    assert message.id.startswith("msg_") and message.type == "message"
    assert message.role == "assistant" and message.model == MODEL
    (block,) = message.content
    assert block.type == "text"
    assert message.stop_reason in ("end_turn", "max_tokens")
    assert message.usage.input_tokens + (message.usage.cache_read_input_tokens or 0) > 0
    assert 1 <= message.usage.output_tokens <= 6
    if message.stop_reason == "max_tokens":
        assert message.usage.output_tokens == 6


def test_system_blocks_and_stop_sequences(client: anthropic.Anthropic) -> None:
    def create(**extra: object) -> anthropic.types.Message:
        return client.messages.create(
            model=MODEL, max_tokens=24, messages=HELLO, extra_body=GREEDY,
            system=[{"type": "text", "text": "Be brief."}], **extra,
        )  # fmt: skip

    full = create()
    text = full.content[0].text
    assert len(text) >= 6, "the greedy reply is long enough to cut"
    stop = text[3:5]
    cut = create(stop_sequences=[stop])
    assert cut.stop_reason == "stop_sequence" and cut.stop_sequence == stop
    assert cut.content[0].text == text[: text.find(stop)]


def test_stream_events_in_order_and_final_message_matches(
    client: anthropic.Anthropic, server: ServeProcess
) -> None:
    with client.messages.stream(
        model=MODEL, max_tokens=12, messages=HELLO, extra_body=GREEDY
    ) as stream:
        streamed = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert final.content[0].text == streamed
    assert final.stop_reason in ("end_turn", "max_tokens")
    assert final.usage.output_tokens >= 1

    body = {"model": MODEL, "max_tokens": 12, "messages": HELLO, "temperature": 0, "stream": True}
    with httpx.stream(
        "POST", f"{server.base_url}/v1/messages", json=body,
        headers={"x-api-key": KEY, "anthropic-version": "2023-06-01"}, timeout=60,
    ) as response:  # fmt: skip
        assert response.headers["content-type"].startswith("text/event-stream")
        names = [line[7:] for line in response.iter_lines() if line.startswith("event: ")]
    assert names[:2] == ["message_start", "content_block_start"]
    assert set(names[2:-3]) == {"content_block_delta"}
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]


def test_forced_tool_then_tool_result_round_trip(client: anthropic.Anthropic) -> None:
    messages: list[anthropic.types.MessageParam] = [{"role": "user", "content": "Weather in Oslo?"}]
    first = client.messages.create(
        model=MODEL, max_tokens=120, messages=messages, tools=[WEATHER, TIME],
        tool_choice={"type": "tool", "name": "get_weather"}, extra_body=GREEDY,
    )  # fmt: skip
    assert first.stop_reason == "tool_use"
    (use,) = [b for b in first.content if b.type == "tool_use"]
    assert use.name == "get_weather" and use.id
    assert isinstance(use.input, dict) and set(use.input) == {"city", "days"}
    assert isinstance(use.input["city"], str) and len(use.input["city"]) <= 12
    assert isinstance(use.input["days"], int)

    messages += [
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": use.id, "content": '{"temp_c": 3}'},
        ]},
    ]  # fmt: skip
    second = client.messages.create(
        model=MODEL, max_tokens=8, messages=messages, tools=[WEATHER, TIME], extra_body=GREEDY
    )
    assert second.stop_reason in ("end_turn", "max_tokens", "tool_use")
    grew = second.usage.input_tokens + (second.usage.cache_read_input_tokens or 0)
    assert grew > first.usage.input_tokens + (first.usage.cache_read_input_tokens or 0)


def test_streamed_forced_tool_use_has_its_input_json(client: anthropic.Anthropic) -> None:
    with client.messages.stream(
        model=MODEL, max_tokens=120, messages=[{"role": "user", "content": "Time?"}],
        tools=[WEATHER, TIME], tool_choice={"type": "any"}, extra_body=GREEDY,
    ) as stream:  # fmt: skip
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use"
    (use,) = [b for b in final.content if b.type == "tool_use"]
    assert use.name in ("get_weather", "get_time") and isinstance(use.input, dict)


def test_count_tokens_grows_with_input(client: anthropic.Anthropic) -> None:
    short = client.messages.count_tokens(model=MODEL, messages=HELLO)
    longer = client.messages.count_tokens(
        model=MODEL, messages=[{"role": "user", "content": "Hello there, " * 20}]
    )
    with_tools = client.messages.count_tokens(model=MODEL, messages=HELLO, tools=[WEATHER])
    assert 0 < short.input_tokens < longer.input_tokens
    assert with_tools.input_tokens > short.input_tokens


def test_wrong_key_is_an_authentication_error(server: ServeProcess) -> None:
    wrong = anthropic.Anthropic(base_url=server.base_url, api_key="hk-wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as caught:
        wrong.messages.create(model=MODEL, max_tokens=4, messages=HELLO)
    assert caught.value.status_code == 401
    body = caught.value.body
    assert isinstance(body, dict) and body["type"] == "error"
    assert body["error"]["type"] == "authentication_error"


def test_errors_take_anthropic_shape(client: anthropic.Anthropic, server: ServeProcess) -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "iVBORw0KGgo="}}  # fmt: skip
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(
            model=MODEL, max_tokens=4,
            messages=[{"role": "user", "content": [image, {"type": "text", "text": "What?"}]}],
        )  # fmt: skip
    assert caught.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert "image" in caught.value.message

    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(
            model=MODEL, max_tokens=4, messages=[{"role": "user", "content": "word " * 3000}]
        )
    assert "prompt is too long" in caught.value.message
    assert "> 2048 maximum" in caught.value.message

    with pytest.raises(anthropic.NotFoundError) as missing:
        client.messages.create(model="no-such-model", max_tokens=4, messages=HELLO)
    assert missing.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]

    response = httpx.post(
        f"{server.base_url}/v1/messages",
        json={"model": MODEL, "messages": HELLO},
        headers={"x-api-key": KEY},
    )
    assert response.status_code == 400
    assert response.json()["type"] == "error"
    assert "max_tokens" in response.json()["error"]["message"]


def test_greedy_text_is_the_same_through_every_dialect(
    client: anthropic.Anthropic, server: ServeProcess
) -> None:
    prompt = "Tell me a story"
    anthropic_text = client.messages.create(
        model=MODEL, max_tokens=12, extra_body=GREEDY,
        messages=[{"role": "user", "content": prompt}],
    ).content[0].text  # fmt: skip
    oai = openai.OpenAI(base_url=f"{server.base_url}/v1", api_key=KEY, max_retries=0)
    openai_text = oai.chat.completions.create(
        model=MODEL, max_tokens=12, extra_body=GREEDY,
        messages=[{"role": "user", "content": prompt}],
    ).choices[0].message.content  # fmt: skip
    ollama = httpx.post(
        f"{server.base_url}/api/chat",
        json={"model": MODEL, "stream": False, "options": {"temperature": 0, "num_predict": 12},
              "messages": [{"role": "user", "content": prompt}]},
        headers=server.headers(), timeout=60,
    )  # fmt: skip
    assert ollama.status_code == 200
    assert anthropic_text == openai_text == ollama.json()["message"]["content"]
