"""OpenAI Responses (stateless) against a real ``hearth serve``, with the official openai SDK.

The model is a tiny random one: these tests check output items, statuses, usage, the
typed stream events, forced function calls and their outputs, never what it says.
"""

from __future__ import annotations

import json

import openai
import pytest

from response_tools import WEATHER
from server_process import start_serve

MODEL = "hearth-tiny-Q8_0"
TIME = {"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {}}}


@pytest.fixture(scope="module")
def client(tiny_model_q8, tmp_path_factory):
    """Tool descriptions are long in a byte-level vocabulary: a 2048-token context."""
    server = start_serve(tiny_model_q8, tmp_path_factory.mktemp("responses"), ctx=2048, parallel=2)
    yield openai.OpenAI(base_url=f"{server.base_url}/v1", api_key="unused", max_retries=0)
    server.stop()


def test_create_with_instructions_and_a_string_input(client: openai.OpenAI) -> None:
    response = client.responses.create(
        model=MODEL, instructions="Be brief.", input="Hello there",
        max_output_tokens=6, temperature=0,
    )  # fmt: skip
    assert response.id.startswith("resp_") and response.object == "response"
    assert response.status in ("completed", "incomplete")
    (item,) = response.output
    assert item.type == "message" and item.role == "assistant"
    assert item.content[0].type == "output_text"
    assert response.output_text == item.content[0].text
    assert response.usage is not None and response.usage.input_tokens > 0
    assert 1 <= response.usage.output_tokens <= 6
    if response.status == "incomplete":
        assert response.incomplete_details is not None
        assert response.incomplete_details.reason == "max_output_tokens"
        assert response.usage.output_tokens == 6
    chat = client.chat.completions.create(
        model=MODEL, max_tokens=6, temperature=0,
        messages=[{"role": "system", "content": "Be brief."},
                  {"role": "user", "content": "Hello there"}],
    )  # fmt: skip
    assert chat.choices[0].message.content == response.output_text  # same greedy text


def test_stream_events_are_typed_and_numbered(client: openai.OpenAI) -> None:
    events = list(
        client.responses.create(
            model=MODEL,
            input=[{"role": "user", "content": "Hello there"}],
            max_output_tokens=8,
            temperature=0,
            stream=True,
        )
    )
    kinds = [e.type for e in events]
    assert kinds[:4] == [
        "response.created", "response.in_progress",
        "response.output_item.added", "response.content_part.added",
    ]  # fmt: skip
    assert kinds[-4:-1] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ]
    assert kinds[-1] in ("response.completed", "response.incomplete")
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    final = events[-1].response
    assert final.output_text == deltas and final.usage is not None
    assert final.id == events[0].response.id


def test_forced_function_call_then_its_output(client: openai.OpenAI) -> None:
    first = client.responses.create(
        model=MODEL, input="Weather in Oslo?", tools=[WEATHER, TIME],
        tool_choice={"type": "function", "name": "get_weather"},
        max_output_tokens=120, temperature=0,
    )  # fmt: skip
    calls = [item for item in first.output if item.type == "function_call"]
    assert len(calls) == 1 and first.status == "completed"
    call = calls[0]
    assert call.name == "get_weather" and call.call_id
    args = json.loads(call.arguments)
    assert set(args) == {"city", "days"} and isinstance(args["days"], int)

    second = client.responses.create(
        model=MODEL, tools=[WEATHER, TIME], max_output_tokens=8, temperature=0,
        input=[
            {"role": "user", "content": "Weather in Oslo?"},
            {"type": "function_call", "call_id": call.call_id, "name": call.name,
             "arguments": call.arguments},
            {"type": "function_call_output", "call_id": call.call_id, "output": '{"temp_c": 3}'},
        ],
    )  # fmt: skip
    assert second.status in ("completed", "incomplete")
    assert second.usage is not None and first.usage is not None
    assert second.usage.input_tokens > first.usage.input_tokens  # the output reached the prompt


def test_stream_helper_gives_the_final_function_call(client: openai.OpenAI) -> None:
    with client.responses.stream(
        model=MODEL, input="What time is it?", tools=[WEATHER, TIME], tool_choice="required",
        max_output_tokens=120, temperature=0,
    ) as stream:  # fmt: skip
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert "response.function_call_arguments.done" in kinds
    (call,) = [item for item in final.output if item.type == "function_call"]
    assert call.name in ("get_weather", "get_time")
    assert isinstance(json.loads(call.arguments), dict)


def test_json_schema_text_format(client: openai.OpenAI) -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
              "additionalProperties": False}  # fmt: skip
    response = client.responses.create(
        model=MODEL, input="Answer in JSON", max_output_tokens=40, temperature=0,
        text={"format": {"type": "json_schema", "name": "answer", "schema": schema}},
    )  # fmt: skip
    assert response.status == "completed"
    assert isinstance(json.loads(response.output_text)["ok"], bool)


def test_refusals_are_clear(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:  # stored ones: test_responses_state
        client.responses.create(model=MODEL, input="Hi", previous_response_id="resp_123")
    assert "resp_123" in caught.value.message
    # Hosted tools are left out, not refused: Codex CLI sends web_search on every turn
    hosted = client.responses.create(
        model=MODEL, input="Hi", max_output_tokens=2, tools=[{"type": "web_search_preview"}]
    )
    assert hosted.status in ("completed", "incomplete")
