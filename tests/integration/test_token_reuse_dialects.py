"""Every dialect's follow-up turn evaluates only its new tokens, against a real
``hearth serve``, with the official clients: OpenAI chat (the reply sent back in
``messages``), OpenAI Responses (``previous_response_id``), Anthropic Messages and
Ollama's ``/api/chat``.

The scripted model answers " hello word!" with ids the tokenizer would not choose
(engine/token_reuse.py), so only reusing those ids keeps the reply in the cache: each
follow-up must find turn 1's prompt and all seven reply tokens cached. One slot, so
nothing else can hold them.
"""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

import gguf_factory
from server_process import ServeProcess, start_serve

REPLY = ("\u2581he", "l", "lo", "\u2581wo", "r", "d", "!")
TEXT = " hello word!"
MODEL = "hearth-reuse"
RULES = "Answer briefly."
ASK, TAIL = "Say hello", "And then?"
GREEDY = {"temperature": 0}  # the anthropic SDK no longer names it; the API takes it


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    folder = tmp_path_factory.mktemp("reuse-dialects")
    model = gguf_factory.write_scripted_llama(folder / f"{MODEL}.gguf", REPLY,
                                              context_length=2048)  # fmt: skip
    served = start_serve(model, folder, ctx=1024, parallel=1)
    yield served
    served.stop()


@pytest.fixture
def oai(server: ServeProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.base_url}/v1", api_key="unused", max_retries=0)


def test_openai_chat_follow_up(oai: openai.OpenAI) -> None:
    turn1: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": RULES},
        {"role": "user", "content": ASK},
    ]
    first = oai.chat.completions.create(model=MODEL, messages=turn1, temperature=0)
    reply = first.choices[0].message.content
    second = oai.chat.completions.create(
        model=MODEL, temperature=0, max_tokens=4,
        messages=[*turn1, {"role": "assistant", "content": reply},
                  {"role": "user", "content": TAIL}],
    )  # fmt: skip
    assert reply == TEXT
    assert first.usage is not None and second.usage is not None
    details = second.usage.prompt_tokens_details
    assert details is not None
    assert details.cached_tokens == first.usage.prompt_tokens + len(REPLY)
    assert second.usage.prompt_tokens > details.cached_tokens


def test_responses_follow_up_by_previous_response_id(oai: openai.OpenAI) -> None:
    first = oai.responses.create(model=MODEL, instructions=RULES, input=ASK, temperature=0)
    second = oai.responses.create(
        model=MODEL, instructions=RULES, previous_response_id=first.id, input=TAIL,
        temperature=0, max_output_tokens=4,
    )  # fmt: skip
    assert first.output_text == TEXT
    assert first.usage is not None and second.usage is not None
    cached = second.usage.input_tokens_details.cached_tokens
    assert cached == first.usage.input_tokens + len(REPLY)
    assert second.usage.input_tokens > cached


def test_anthropic_follow_up(server: ServeProcess) -> None:
    client = anthropic.Anthropic(base_url=server.base_url, api_key="unused", max_retries=0)
    turn1: list[anthropic.types.MessageParam] = [{"role": "user", "content": ASK}]
    first = client.messages.create(model=MODEL, system=RULES, messages=turn1, max_tokens=16,
                                   extra_body=GREEDY)  # fmt: skip
    (block,) = first.content
    assert block.type == "text" and block.text == TEXT
    second = client.messages.create(
        model=MODEL, system=RULES, max_tokens=4, extra_body=GREEDY,
        messages=[*turn1, {"role": "assistant", "content": block.text},
                  {"role": "user", "content": TAIL}],
    )  # fmt: skip
    # Anthropic counts the uncached input apart from what was read from the cache.
    first_prompt = first.usage.input_tokens + (first.usage.cache_read_input_tokens or 0)
    assert second.usage.cache_read_input_tokens == first_prompt + len(REPLY)
    assert second.usage.input_tokens > 0


def test_ollama_chat_follow_up(server: ServeProcess) -> None:
    """Ollama's reply carries no cache count: the request log has it, by request id."""
    turn1 = [{"role": "system", "content": RULES}, {"role": "user", "content": ASK}]
    options = {"temperature": 0, "num_predict": 16}
    with httpx.Client(base_url=server.base_url, timeout=60) as http:
        first = http.post("/api/chat", json={"model": MODEL, "messages": turn1, "stream": False,
                                             "options": options})  # fmt: skip
        reply = first.json()["message"]["content"]
        messages = [*turn1, {"role": "assistant", "content": reply},
                    {"role": "user", "content": TAIL}]  # fmt: skip
        second = http.post("/api/chat", json={"model": MODEL, "messages": messages,
                                              "stream": False, "options": options})  # fmt: skip
        log = http.get("/hearth/v1/requests").json()["requests"]
    assert first.status_code == second.status_code == 200
    assert reply == TEXT
    by_id = {entry["request_id"]: entry for entry in log}
    done = by_id[second.headers["x-request-id"]]
    assert done["prompt_tokens"] == second.json()["prompt_eval_count"]
    assert done["cached_tokens"] == first.json()["prompt_eval_count"] + len(REPLY)
