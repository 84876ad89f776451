"""Stored OpenAI Responses against a real ``hearth serve``, with the official openai SDK:
``store``, ``previous_response_id``, retrieve, delete, input_items, and the prompt cache.

The model is a tiny random one; the tests check what the server keeps and how the
continued conversation is rendered (its token counts and cached prefix), never what the
model says.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import openai
import pytest

from response_tools import WEATHER
from server_process import start_serve

MODEL = "hearth-tiny-Q8_0"
RULES = "Answer briefly."
ENDINGS = ("response.completed", "response.incomplete")


@pytest.fixture(scope="module")
def server(tiny_model_q8, tmp_path_factory):
    """One slot, so a continuation can only be served from the previous turn's cache
    when its prompt really starts with that turn's prompt and reply."""
    served = start_serve(tiny_model_q8, tmp_path_factory.mktemp("state"), ctx=2048, parallel=1)
    yield served
    served.stop()


@pytest.fixture
def client(server):
    return openai.OpenAI(base_url=f"{server.base_url}/v1", api_key="unused", max_retries=0)


def test_required_tool_call_continued_by_id_with_its_output(client: openai.OpenAI) -> None:
    first = client.responses.create(
        model=MODEL, instructions=RULES, input="Weather in Oslo?", tools=[WEATHER],
        tool_choice="required", max_output_tokens=120, temperature=0,
    )  # fmt: skip
    assert first.store is True and first.previous_response_id is None
    (call,) = [item for item in first.output if item.type == "function_call"]
    args = json.loads(call.arguments)
    assert set(args) == {"city", "days"} and isinstance(args["days"], int)

    second = client.responses.create(
        model=MODEL, instructions=RULES, previous_response_id=first.id, tools=[WEATHER],
        input=[{"type": "function_call_output", "call_id": call.call_id,
                "output": '{"temp_c": 3}'}],
        max_output_tokens=8, temperature=0,
    )  # fmt: skip
    assert second.previous_response_id == first.id
    assert first.usage is not None and second.usage is not None
    assert second.usage.input_tokens > first.usage.input_tokens  # the earlier turn is there
    # The earlier prompt was served from the slot's cache, not evaluated again.
    assert second.usage.input_tokens_details.cached_tokens >= first.usage.input_tokens - 1

    # The same conversation sent whole, statelessly, renders to the same prompt.
    whole = client.responses.create(
        model=MODEL, instructions=RULES, tools=[WEATHER], store=False,
        input=[
            {"role": "user", "content": "Weather in Oslo?"},
            {"type": "function_call", "call_id": call.call_id, "name": call.name,
             "arguments": call.arguments},
            {"type": "function_call_output", "call_id": call.call_id, "output": '{"temp_c": 3}'},
        ],
        max_output_tokens=8, temperature=0,
    )  # fmt: skip
    assert whole.usage is not None
    assert whole.usage.input_tokens == second.usage.input_tokens
    assert whole.output_text == second.output_text  # greedy: same prompt, same reply


def test_a_text_turn_continued_reuses_the_cached_prompt_and_reply(
    client: openai.OpenAI,
) -> None:
    first = client.responses.create(
        model=MODEL, instructions=RULES, input="Tell me about Oslo", max_output_tokens=12,
        temperature=0,
    )  # fmt: skip
    second = client.responses.create(
        model=MODEL, instructions=RULES, previous_response_id=first.id, input="And Bergen?",
        max_output_tokens=4, temperature=0,
    )  # fmt: skip
    assert first.usage is not None and second.usage is not None
    cached = second.usage.input_tokens_details.cached_tokens
    # The previous prompt and (nearly all of) its reply, as the template renders them.
    assert cached >= first.usage.input_tokens + first.usage.output_tokens - 2, (
        cached, first.usage, second.usage,
    )  # fmt: skip
    assert second.usage.input_tokens > cached


def test_streamed_response_is_stored_before_its_last_event(client: openai.OpenAI) -> None:
    events = client.responses.create(
        model=MODEL, input="Hello there", max_output_tokens=6, temperature=0, stream=True
    )
    final = next(e.response for e in events if e.type in ENDINGS)  # the stream's last event
    events.close()
    again = client.responses.retrieve(final.id)
    assert again.id == final.id and again.output_text == final.output_text
    follow = client.responses.create(
        model=MODEL, previous_response_id=final.id, input="More", max_output_tokens=4,
        temperature=0, stream=True,
    )  # fmt: skip
    done = [e for e in follow if e.type in ENDINGS]
    assert done and done[0].response.previous_response_id == final.id


def test_retrieve_delete_and_not_found(client: openai.OpenAI, server) -> None:
    made = client.responses.create(
        model=MODEL, instructions=RULES, input="Hi", max_output_tokens=4, temperature=0
    )
    got = client.responses.retrieve(made.id)
    assert got.model_dump() == made.model_dump()
    assert got.instructions == RULES

    items = httpx.get(f"{server.base_url}/v1/responses/{made.id}/input_items").json()
    assert items["object"] == "list" and items["has_more"] is False
    assert [(i["type"], i["role"], i["content"]) for i in items["data"]] == [
        ("message", "user", "Hi")
    ]

    deleted = httpx.delete(f"{server.base_url}/v1/responses/{made.id}")
    assert deleted.status_code == 200
    assert deleted.json() == {"id": made.id, "object": "response.deleted", "deleted": True}
    with pytest.raises(openai.NotFoundError) as caught:
        client.responses.retrieve(made.id)
    assert made.id in caught.value.message
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(made.id)
    with pytest.raises(openai.NotFoundError) as caught:
        client.responses.create(model=MODEL, input="Hi", previous_response_id=made.id)
    body = caught.value.body
    assert isinstance(body, dict) and body["param"] == "previous_response_id"


def test_unstored_responses_are_not_retrievable(client: openai.OpenAI) -> None:
    made = client.responses.create(
        model=MODEL, input="Hi", store=False, max_output_tokens=4, temperature=0
    )
    assert made.store is False
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(made.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model=MODEL, input="Hi", previous_response_id=made.id)


def test_an_output_for_an_unknown_call_is_refused(client: openai.OpenAI) -> None:
    made = client.responses.create(model=MODEL, input="Hi", max_output_tokens=4, temperature=0)
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(
            model=MODEL, previous_response_id=made.id,
            input=[{"type": "function_call_output", "call_id": "call_nope", "output": "1"}],
        )  # fmt: skip
    assert "call_nope" in caught.value.message


def test_stored_responses_survive_a_restart(tiny_model_q8: Path, tmp_path: Path) -> None:
    data_dir = Path(os.environ["HEARTH_DATA_DIR"])
    first = start_serve(tiny_model_q8, tmp_path, ctx=512, parallel=1)
    try:
        api = openai.OpenAI(base_url=f"{first.base_url}/v1", api_key="unused", max_retries=0)
        made = api.responses.create(model=MODEL, input="Hi", max_output_tokens=4, temperature=0)
    finally:
        first.stop()
    assert (data_dir / "responses.db").exists()
    second = start_serve(tiny_model_q8, tmp_path, ctx=512, parallel=1)
    try:
        api = openai.OpenAI(base_url=f"{second.base_url}/v1", api_key="unused", max_retries=0)
        assert api.responses.retrieve(made.id).model_dump() == made.model_dump()
        follow = api.responses.create(
            model=MODEL, input="Again", previous_response_id=made.id, max_output_tokens=4,
            temperature=0,
        )  # fmt: skip
        assert follow.usage is not None and made.usage is not None
        assert follow.usage.input_tokens > made.usage.input_tokens
    finally:
        second.stop()
