"""Hostile request bodies get a 400 in the dialect's own error shape, never a 500.

Each case runs against a real ``hearth serve`` over one keep-alive connection: the
rejected request must leave that connection usable, so the next, normal request goes
out on the same socket and succeeds. Schema limits are checked the same way, and a big
schema that is allowed compiles off the event loop: ``/health`` keeps answering.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx
import pytest

MODEL = "hearth-tiny-Q8_0"
CHAT_PATHS = {
    "openai": "/v1/chat/completions",
    "ollama": "/api/chat",
    "anthropic": "/v1/messages",
}
DIALECTS = list(CHAT_PATHS)
SCHEMA_DIALECTS = ["openai", "ollama"]  # the dialects with an output schema


def _chat_body(dialect: str, content: Any = "Hello", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": content}]}
    if dialect == "ollama":
        body.update(stream=False, options={"num_predict": 2})
    else:
        body["max_tokens"] = 2
    return {**body, **extra}


def _error_message(response: httpx.Response, dialect: str) -> str:
    """The error text, after checking status and the dialect's exact error shape."""
    assert response.status_code == 400, response.text
    body = response.json()
    assert set(body) == ({"type", "error"} if dialect == "anthropic" else {"error"}), body
    if dialect == "openai":
        assert set(body["error"]) == {"message", "type", "param", "code"}
        assert body["error"]["type"] == "invalid_request_error"
        message = body["error"]["message"]
    elif dialect == "anthropic":
        assert body == {"type": "error", "error": body["error"]}
        assert body["error"]["type"] == "invalid_request_error"
        message = body["error"]["message"]
    else:
        message = body["error"]
    assert isinstance(message, str) and message
    return message


def _local_port(response: httpx.Response) -> int:
    return int(response.extensions["network_stream"].get_extra_info("socket").getsockname()[1])


@pytest.fixture
def client(serve_q8):
    with httpx.Client(base_url=serve_q8.base_url, timeout=120) as client:
        yield client


def _rejected_then_served(client: httpx.Client, dialect: str, raw: bytes) -> str:
    """Send ``raw``, expect a 400; then a normal chat on the same connection succeeds."""
    path = CHAT_PATHS[dialect]
    bad = client.post(path, content=raw, headers={"content-type": "application/json"})
    message = _error_message(bad, dialect)
    port = _local_port(bad)
    good = client.post(path, json=_chat_body(dialect))
    assert good.status_code == 200, good.text
    assert _local_port(good) == port, "the rejected request closed the keep-alive connection"
    return message


@pytest.mark.parametrize("dialect", DIALECTS)
def test_nul_in_model_name(client, dialect):
    raw = json.dumps({**_chat_body(dialect), "model": "hearth\u0000tiny"}).encode()
    message = _rejected_then_served(client, dialect, raw)
    assert message == "model contains a NUL character."


@pytest.mark.parametrize("dialect", DIALECTS)
def test_nul_in_message_content(client, dialect):
    raw = json.dumps(_chat_body(dialect, content="a\u0000b")).encode()
    message = _rejected_then_served(client, dialect, raw)
    assert message == "messages[0].content contains a NUL character."


@pytest.mark.parametrize("dialect", DIALECTS)
def test_deeply_nested_json(client, dialect):
    depth = 20_000
    raw = json.dumps(_chat_body(dialect, content="@")).encode()
    raw = raw.replace(b'"@"', b"[" * depth + b"]" * depth)
    message = _rejected_then_served(client, dialect, raw)
    assert "nested deeper than 64 levels" in message


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("surrogate", [rb'"\ud800"', b'"\xed\xa0\x80"'], ids=["escape", "utf8"])
def test_lone_surrogate_in_content(client, dialect, surrogate):
    raw = json.dumps(_chat_body(dialect, content="@")).encode().replace(b'"@"', surrogate)
    message = _rejected_then_served(client, dialect, raw)
    assert message == "messages[0].content contains a lone UTF-16 surrogate."


def test_surrogate_pairs_are_fine(client):
    raw = json.dumps(_chat_body("openai", content="smile \U0001f600"), ensure_ascii=True)
    assert "\\ud83d\\ude00" in raw
    response = client.post(CHAT_PATHS["openai"], content=raw.encode(),
                           headers={"content-type": "application/json"})  # fmt: skip
    assert response.status_code == 200, response.text


def test_nul_in_path_and_in_ollama_show(client):
    listed = client.get("/v1/models/hearth%00tiny")
    assert _error_message(listed, "openai") == "The URL path contains a NUL character."
    port = _local_port(listed)
    shown = client.post("/api/show", json={"model": "hearth\u0000tiny"})
    assert _error_message(shown, "ollama") == "model contains a NUL character."
    assert client.get(f"/v1/models/{MODEL}").status_code == 200
    assert _local_port(shown) == port


def _schema_body(dialect: str, schema: dict[str, Any]) -> dict[str, Any]:
    if dialect == "openai":
        fmt = {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}
        return _chat_body(dialect, response_format=fmt, max_tokens=1)
    return _chat_body(dialect, format=schema, options={"num_predict": 1})


def _schema_path(dialect: str) -> str:
    return "response_format.json_schema.schema" if dialect == "openai" else "format"


@pytest.mark.parametrize("dialect", SCHEMA_DIALECTS)
def test_huge_enum_is_refused_quickly(client, dialect):
    schema = {"type": "string", "enum": [f"value-{i}" for i in range(50_000)]}
    started = time.monotonic()
    raw = json.dumps(_schema_body(dialect, schema)).encode()
    message = _rejected_then_served(client, dialect, raw)
    assert message == f"{_schema_path(dialect)}.enum has 50000 values; the limit is 1024."
    assert time.monotonic() - started < 10  # it took 40 s or more to compile before


@pytest.mark.parametrize("dialect", SCHEMA_DIALECTS)
def test_long_repetition_is_refused(client, dialect):
    schema = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 100_000}}}
    raw = json.dumps(_schema_body(dialect, schema)).encode()
    message = _rejected_then_served(client, dialect, raw)
    path = _schema_path(dialect)
    assert message == f"{path}.properties.text.maxLength is 100000; the limit is 1000."


def test_oversized_schema_and_tool_schema_are_refused(client):
    big = {"type": "object", "properties": {f"p{i}": {"type": "string", "description": "x" * 1000}
                                            for i in range(200)}}  # fmt: skip
    message = _rejected_then_served(
        client, "openai", json.dumps(_schema_body("openai", big)).encode()
    )
    assert message.startswith("response_format.json_schema.schema is ")
    assert message.endswith(" bytes; the limit is 131072.")
    tool = {"type": "function", "function": {"name": "f", "parameters": big}}
    raw = json.dumps(_chat_body("ollama", tools=[tool])).encode()
    message = _rejected_then_served(client, "ollama", raw)
    assert message.startswith("tools[0].function.parameters is ")
    tool = {"name": "f", "input_schema": big}
    raw = json.dumps(_chat_body("anthropic", tools=[tool])).encode()
    message = _rejected_then_served(client, "anthropic", raw)
    assert message.startswith("tools[0].input_schema is ")


def _slow_but_allowed_schema(tag: str) -> dict[str, Any]:
    """About 95 KB: a dozen objects of 256 optional properties (the converter is
    quadratic in them). ``tag`` makes it unique: the server caches conversions."""

    def obj(k: int) -> dict[str, Any]:
        props = {f"{tag}{k}p{i}": {"type": "string"} for i in range(256)}
        return {"type": "object", "properties": props}

    return {"type": "object", "properties": {f"{tag}{k}": obj(k) for k in range(12)}}


def _slow_body(case: str) -> tuple[str, dict[str, Any]]:
    schema = _slow_but_allowed_schema(case[:2])
    if case == "tool":  # a forced call: the tools' schemas become the grammar
        tool = {"type": "function", "function": {"name": "f", "parameters": schema}}
        return "openai", _chat_body("openai", tools=[tool], tool_choice="required")
    return case, _schema_body(case, schema)


@pytest.mark.parametrize("case", [*SCHEMA_DIALECTS, "tool"])
def test_health_stays_fast_while_a_big_schema_compiles(serve_q8, case):
    dialect, body = _slow_body(case)
    done = threading.Event()
    result: dict[str, Any] = {}

    def send() -> None:
        started = time.monotonic()
        try:
            result["response"] = httpx.post(
                f"{serve_q8.base_url}{CHAT_PATHS[dialect]}", json=body, timeout=120
            )
        finally:
            result["seconds"] = time.monotonic() - started
            done.set()

    latencies: list[float] = []
    with httpx.Client(base_url=serve_q8.base_url, timeout=60) as health:
        health.get("/health")  # open the connection before the clock starts
        sender = threading.Thread(target=send)
        sender.start()
        while not done.is_set():
            started = time.monotonic()
            assert health.get("/health").status_code == 200
            latencies.append(time.monotonic() - started)
        sender.join()
    response = result["response"]
    if case == "tool":  # the tools' text alone overflows the tiny context, after the compile
        assert response.status_code == 400, response.text
        assert response.json()["error"]["code"] == "context_length_exceeded"
    else:
        assert response.status_code == 200, response.text
    assert result["seconds"] > 0.3, "the schema compiled too fast to tell anything"
    assert len(latencies) >= 3
    assert max(latencies) * 3 < result["seconds"], (max(latencies), result["seconds"])
