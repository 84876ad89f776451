"""Bad input gets an OpenAI-shaped error with the right status, and serving goes on."""

from __future__ import annotations

import httpx
import pytest


def _assert_openai_error(response: httpx.Response, status: int, code: str | None = None):
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["message"]
    assert "Traceback" not in response.text
    if code is not None:
        assert body["error"]["code"] == code
    return body["error"]


def _still_serving(base_url: str) -> None:
    response = httpx.post(
        f"{base_url}/v1/completions",
        json={"prompt": "still alive", "max_tokens": 2},
        timeout=30,
    )
    assert response.status_code == 200
    assert httpx.get(f"{base_url}/health").json()["status"] == "ok"


@pytest.fixture
def url(serve_q8):
    return serve_q8.base_url


def test_bad_json(url):
    response = httpx.post(
        f"{url}/v1/chat/completions",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    _assert_openai_error(response, 400, "invalid_json")
    _still_serving(url)


def test_missing_messages(url):
    response = httpx.post(f"{url}/v1/chat/completions", json={"model": "hearth-tiny-Q8_0"})
    error = _assert_openai_error(response, 400)
    assert error["param"] == "messages"
    assert error["type"] == "invalid_request_error"
    _still_serving(url)


def test_wrong_types_name_the_parameter(url):
    response = httpx.post(
        f"{url}/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "x"}], "temperature": "hot"},
    )
    error = _assert_openai_error(response, 400)
    assert error["param"] == "temperature"


def test_unknown_model(url):
    response = httpx.post(
        f"{url}/v1/chat/completions",
        json={"model": "gpt-17", "messages": [{"role": "user", "content": "hi"}]},
    )
    error = _assert_openai_error(response, 404, "model_not_found")
    assert "hearth-tiny-Q8_0" in error["message"]
    _still_serving(url)


@pytest.mark.parametrize("stream", [False, True])
def test_prompt_longer_than_context(url, stream):
    response = httpx.post(
        f"{url}/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "word " * 2000}], "stream": stream},
        timeout=30,
    )
    error = _assert_openai_error(response, 400, "context_length_exceeded")
    assert "512" in error["message"]
    _still_serving(url)


def test_prompt_plus_max_tokens_over_context(url):
    response = httpx.post(f"{url}/v1/completions", json={"prompt": "hello", "max_tokens": 100_000})
    _assert_openai_error(response, 400, "context_length_exceeded")


def test_logit_bias_outside_vocabulary(url):
    response = httpx.post(
        f"{url}/v1/completions", json={"prompt": "hi", "logit_bias": {"999999": 5}}
    )
    error = _assert_openai_error(response, 400)
    assert error["param"] == "logit_bias"
    _still_serving(url)


def test_unknown_route_is_openai_shaped(url):
    _assert_openai_error(httpx.get(f"{url}/v1/nope"), 404)


def test_empty_body(url):
    _assert_openai_error(httpx.post(f"{url}/v1/completions", content=b""), 400, "invalid_json")


def test_foreign_host_header_rejected(url):
    response = httpx.get(f"{url}/v1/models", headers={"Host": "attacker.example"})
    _assert_openai_error(response, 403, "forbidden_host")


def test_client_disconnect_frees_the_slot(url):
    import time

    with httpx.stream(
        "POST",
        f"{url}/v1/completions",
        json={
            "prompt": "long",
            "max_tokens": 400,
            "stream": True,
            "logit_bias": {"2": -100, "260": -100},
        },
        timeout=30,
    ) as response:
        lines = response.iter_lines()
        for _ in range(3):
            next(lines)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        status = httpx.get(f"{url}/hearth/v1/status").json()
        if not any(slot["busy"] for slot in status["slots"]):
            break
        time.sleep(0.05)
    assert not any(slot["busy"] for slot in status["slots"])
    _still_serving(url)
