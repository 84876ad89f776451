"""The official ``ollama`` Python client against a real ``hearth serve`` subprocess."""

from __future__ import annotations

import httpx
import ollama
import pytest

NO_EOG = {"num_predict": 12, "temperature": 0}
MODEL = "hearth-tiny-Q8_0"


@pytest.fixture
def client(serve_q8):
    return ollama.Client(host=serve_q8.base_url)


def test_version_tags_ps(client, serve_q8):
    version = httpx.get(f"{serve_q8.base_url}/api/version").json()
    assert version["version"].count(".") == 2
    models = client.list().models
    assert [m.model for m in models] == [f"{MODEL}:latest"]
    assert models[0].details.format == "gguf"
    assert models[0].details.family == "llama"
    assert models[0].details.quantization_level == "Q8_0"
    assert models[0].size > 0
    assert [m.model for m in client.ps().models] == [f"{MODEL}:latest"]


def test_show_advertises_fim_template(client):
    shown = client.show(MODEL)
    assert ".Suffix" in shown.template
    assert "<|fim_prefix|>" in shown.template and "<|fim_middle|>" in shown.template
    assert "insert" in shown.capabilities
    assert shown.modelinfo["general.architecture"] == "llama"


def test_chat_streaming_and_not(client):
    messages = [{"role": "user", "content": "Hello"}]
    whole = client.chat(model=MODEL, messages=messages, options=NO_EOG)
    assert whole.done and whole.message.role == "assistant"
    assert whole.prompt_eval_count > 3 and 0 < whole.eval_count <= 12
    parts = list(client.chat(model=MODEL, messages=messages, options=NO_EOG, stream=True))
    assert len(parts) >= 3
    assert all(not p.done for p in parts[:-1]) and parts[-1].done
    assert parts[-1].done_reason in ("stop", "length")
    assert "".join(p.message.content for p in parts) == whole.message.content


def test_generate_with_system_and_raw(client):
    plain = client.generate(model=MODEL, prompt="Tell me", options=NO_EOG)
    assert plain.done and plain.eval_count > 0
    raw = client.generate(model=MODEL, prompt="Tell me", raw=True, options=NO_EOG)
    assert raw.prompt_eval_count < plain.prompt_eval_count  # no chat template around it
    streamed = list(client.generate(model=MODEL, prompt="Tell me", options=NO_EOG, stream=True))
    assert "".join(p.response for p in streamed) == plain.response


def test_generate_suffix_is_fill_in_the_middle(client, serve_q8):
    fim = client.generate(
        model=MODEL, prompt="def add(a, b):\n", suffix="\n    return c", options=NO_EOG
    )
    assert fim.done
    # prefix tokens + FIM markers + BOS: more than the prefix alone, fewer than a chat prompt
    raw = client.generate(model=MODEL, prompt="def add(a, b):\n", raw=True, options=NO_EOG)
    assert fim.prompt_eval_count > raw.prompt_eval_count


def test_num_predict_stops_with_length(client):
    result = client.generate(
        model=MODEL, prompt="Go", raw=True, options={"num_predict": 5, "temperature": 0}
    )
    assert result.eval_count <= 5
    if result.eval_count == 5:
        assert result.done_reason == "length"


def test_empty_request_just_loads(client):
    result = client.generate(model=MODEL, prompt="")
    assert result.done and result.done_reason == "load"


def test_errors_are_ollama_shaped(client, serve_q8):
    with pytest.raises(ollama.ResponseError) as unknown:
        client.chat(model="llama9:70b", messages=[{"role": "user", "content": "x"}])
    assert unknown.value.status_code == 404
    assert MODEL in unknown.value.error
    response = httpx.post(f"{serve_q8.base_url}/api/chat", content=b"{oops")
    assert response.status_code == 400
    assert set(response.json()) == {"error"}
    response = httpx.post(
        f"{serve_q8.base_url}/api/generate", json={"model": MODEL, "prompt": "x", "format": 7}
    )
    assert response.status_code == 400
    assert "format" in response.json()["error"]


def test_format_json_and_schema(client):
    import json

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
              "additionalProperties": False}  # fmt: skip
    reply = client.chat(model=MODEL, messages=[{"role": "user", "content": "JSON"}],
                        format=schema, options={"num_predict": 60, "temperature": 0})  # fmt: skip
    value = json.loads(reply.message.content)
    assert set(value) == {"n"} and isinstance(value["n"], int)
    loose = client.generate(model=MODEL, prompt="JSON", format="json",
                            options={"num_predict": 200, "temperature": 0})  # fmt: skip
    assert loose.response.lstrip().startswith("{")
