"""logprobs / top_logprobs through the openai client."""

from __future__ import annotations

import math

import openai
import pytest

MODEL = "hearth-tiny-Q8_0"
NO_EOG = {"2": -100, "260": -100}


@pytest.fixture
def client(serve_q8):
    return openai.OpenAI(base_url=f"{serve_q8.base_url}/v1", api_key="unused", max_retries=0)


def test_chat_logprobs_greedy_token_is_the_top_one(client):
    response = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "hi"}],
        max_tokens=6,
        temperature=0,
        logprobs=True,
        top_logprobs=3,
        logit_bias=NO_EOG,
    )
    entries = response.choices[0].logprobs.content
    assert len(entries) == 6
    assert "".join(e.token for e in entries) == response.choices[0].message.content
    for entry in entries:
        assert entry.logprob <= 0.0
        assert len(entry.top_logprobs) == 3
        assert entry.top_logprobs[0].token == entry.token
        assert entry.top_logprobs[0].logprob == pytest.approx(entry.logprob)
        assert [t.logprob for t in entry.top_logprobs] == sorted(
            (t.logprob for t in entry.top_logprobs), reverse=True
        )
        assert sum(math.exp(t.logprob) for t in entry.top_logprobs) <= 1.0 + 1e-6
        assert bytes(entry.bytes).decode("utf-8", "replace") == entry.token


def test_streamed_logprobs_match(client):
    kwargs = dict(
        model=MODEL,
        messages=[{"role": "user", "content": "hi"}],
        max_tokens=6,
        temperature=0,
        logprobs=True,
        top_logprobs=2,
        logit_bias=NO_EOG,
    )
    whole = [
        e.logprob for e in client.chat.completions.create(**kwargs).choices[0].logprobs.content
    ]
    streamed = [
        e.logprob
        for chunk in client.chat.completions.create(stream=True, **kwargs)
        if chunk.choices and chunk.choices[0].logprobs
        for e in chunk.choices[0].logprobs.content
    ]
    assert streamed == pytest.approx(whole)


def test_completion_logprobs_shape(client):
    response = client.completions.create(
        model=MODEL,
        prompt="Once",
        max_tokens=5,
        temperature=0,
        logprobs=2,
        logit_bias=NO_EOG,
    )
    lp = response.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == 5
    assert lp.text_offset[0] == 0 and lp.text_offset == sorted(lp.text_offset)
    assert all(len(top) <= 2 for top in lp.top_logprobs)


def test_logprobs_off_by_default(client):
    response = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=3
    )
    assert response.choices[0].logprobs is None
