"""Remote engines behind Hearth's endpoint (issue 15), with real servers on 127.0.0.1.

A second ``hearth serve`` (with its own API key) is the remote engine. The gateway, a
``hearth serve`` with no model of its own, has it registered twice through the real
CLI: once as an OpenAI-compatible engine (``oa``) and once as an Ollama engine
(``ol``), plus one with a wrong key (``bad``) and one where nothing listens (``dead``).
Greedy output through the gateway, in every dialect, must equal asking the remote
directly; failures must name the engine; the remote key must never show.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from gguf_factory import EOS_ID
from remote_testing import (
    GREEDY,
    HELLO,
    REMOTE_KEY,
    WEATHER_TOOL,
    WRONG_KEY,
    direct,
    direct_text,
    hearth_cli,
    serve_on,
    through,
)
from server_process import ServeProcess, free_port

# --------------------------------------------------------------------------- listing


def test_engine_models_are_listed_namespaced_and_marked_remote(
    gateway: ServeProcess, remote_model: str
) -> None:
    models = {m.id: m for m in through(gateway).models.list().data}
    for engine in ("oa", "ol"):
        listed = models[f"{engine}/{remote_model}"]
        assert listed.owned_by == engine
        assert listed.model_extra is not None and listed.model_extra["meta"]["remote"] is True
    assert not any(name.startswith(("bad/", "dead/")) for name in models)  # they cannot list
    tags = httpx.get(f"{gateway.base_url}/api/tags").json()["models"]
    by_name = {t["name"]: t for t in tags}
    tag = by_name[f"ol/{remote_model}:latest"]
    assert tag["remote_model"] == remote_model and tag["remote_host"].startswith("http://")
    one = httpx.get(f"{gateway.base_url}/v1/models/oa/{remote_model}").json()
    assert one["id"] == f"oa/{remote_model}" and one["owned_by"] == "oa"
    shown = httpx.post(f"{gateway.base_url}/api/show", json={"model": f"ol/{remote_model}"})
    assert shown.status_code == 200 and "tools" in shown.json()["capabilities"]


# --------------------------------------------------------------------------- every dialect


@pytest.mark.parametrize("engine", ["oa", "ol"])
def test_openai_chat_through_the_gateway_equals_asking_the_remote(
    gateway: ServeProcess, remote: ServeProcess, remote_model: str, engine: str
) -> None:
    expected = direct_text(remote, remote_model)
    assert expected
    client, model = through(gateway), f"{engine}/{remote_model}"
    whole = client.chat.completions.create(model=model, messages=HELLO, **GREEDY)  # type: ignore[arg-type]
    assert whole.choices[0].message.content == expected
    assert whole.model == model
    assert whole.usage is not None and whole.usage.completion_tokens > 0
    # Long enough to stream in pieces: the tiny model makes 10k tokens/s, and what the
    # gateway reads at once (a burst, or all that came while its response started) leaves
    # as one delta, so a short reply can come in one piece.
    longer = {**GREEDY, "max_tokens": 300, "logit_bias": {str(EOS_ID): -100}}
    expected = direct_text(remote, remote_model, **longer)
    pieces = []
    stream = client.chat.completions.create(model=model, messages=HELLO, stream=True, **longer)  # type: ignore[arg-type]
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
    assert len(pieces) > 1 and "".join(pieces) == expected


def test_openai_completions_through_the_gateway(
    gateway: ServeProcess, remote: ServeProcess, remote_model: str
) -> None:
    ask = {"prompt": "Once upon", "temperature": 0, "max_tokens": 10}
    expected = direct(remote).completions.create(model=remote_model, **ask).choices[0].text  # type: ignore[call-overload]
    got = through(gateway).completions.create(model=f"oa/{remote_model}", **ask)  # type: ignore[call-overload]
    assert got.choices[0].text == expected


@pytest.mark.parametrize("engine", ["oa", "ol"])
def test_ollama_chat_at_the_gateway_streams_the_remote_reply(
    gateway: ServeProcess, remote: ServeProcess, remote_model: str, engine: str
) -> None:
    expected = direct_text(remote, remote_model)
    body = {
        "model": f"{engine}/{remote_model}:latest",
        "messages": HELLO,
        "options": {"temperature": 0, "num_predict": GREEDY["max_tokens"], "seed": 7},
    }
    with httpx.stream("POST", f"{gateway.base_url}/api/chat", json=body, timeout=60) as response:
        assert response.status_code == 200
        lines = [json.loads(line) for line in response.iter_lines() if line]
    assert lines[-1]["done"] is True and lines[-1]["eval_count"] > 0
    assert lines[-1]["model"] == f"{engine}/{remote_model}:latest"
    assert "".join(line["message"]["content"] for line in lines) == expected


@pytest.mark.parametrize("engine", ["oa", "ol"])
def test_anthropic_messages_at_the_gateway_reach_the_engine(
    gateway: ServeProcess, remote: ServeProcess, remote_model: str, engine: str
) -> None:
    expected = direct_text(remote, remote_model)
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key="unused", max_retries=0)
    model = f"{engine}/{remote_model}"
    message = client.messages.create(model=model, max_tokens=GREEDY["max_tokens"],
                                     messages=HELLO, extra_body={"temperature": 0})  # type: ignore[arg-type]  # fmt: skip
    assert message.content[0].type == "text" and message.content[0].text == expected
    assert message.stop_reason in ("end_turn", "max_tokens") and message.usage.output_tokens > 0
    with client.messages.stream(model=model, max_tokens=GREEDY["max_tokens"], messages=HELLO,
                                extra_body={"temperature": 0}) as stream:  # type: ignore[arg-type]  # fmt: skip
        streamed = "".join(stream.text_stream)
    assert streamed == expected


def test_a_responses_request_reaches_the_engine(
    gateway: ServeProcess, remote: ServeProcess, remote_model: str
) -> None:
    expected = direct_text(remote, remote_model)
    reply = through(gateway).responses.create(
        model=f"ol/{remote_model}", input="Hello there", temperature=0,
        max_output_tokens=GREEDY["max_tokens"],
    )  # fmt: skip
    assert reply.output_text == expected and reply.model == f"ol/{remote_model}"


def test_a_named_tool_choice_reaches_the_engine_and_its_call_comes_back(
    gateway: ServeProcess, remote: ServeProcess, remote_model: str
) -> None:
    ask = {
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [WEATHER_TOOL],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "temperature": 0,
        "max_tokens": 200,
    }
    expected = direct(remote).chat.completions.create(model=remote_model, **ask)  # type: ignore[call-overload]
    got = through(gateway).chat.completions.create(model=f"oa/{remote_model}", **ask)  # type: ignore[call-overload]
    (call,) = got.choices[0].message.tool_calls
    assert got.choices[0].finish_reason == "tool_calls"
    assert call.function.name == "get_weather" and "city" in json.loads(call.function.arguments)
    assert call.function.arguments == expected.choices[0].message.tool_calls[0].function.arguments


def test_leaving_a_stream_early_frees_the_remote_slot(
    gateway: ServeProcess, remote: ServeProcess, remote_model: str
) -> None:
    body = {"model": f"oa/{remote_model}", "messages": HELLO, "stream": True,
            "max_tokens": 800, "logit_bias": {str(EOS_ID): -100}}  # fmt: skip
    with httpx.stream("POST", f"{gateway.base_url}/v1/chat/completions", json=body,
                      timeout=60) as response:  # fmt: skip
        for line in response.iter_lines():
            if line.startswith("data: {") and "content" in line:
                break
    status_url = f"{remote.base_url}/hearth/v1/status"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        slots = httpx.get(status_url, headers=remote.headers()).json()["slots"]
        if not any(slot["busy"] for slot in slots):
            return
        time.sleep(0.05)
    pytest.fail("the remote engine kept generating after the client left")


# --------------------------------------------------------------------------- failures


def test_a_wrong_remote_key_is_a_502_naming_the_engine(
    gateway: ServeProcess, remote_model: str
) -> None:
    with pytest.raises(openai.APIStatusError) as caught:
        through(gateway).chat.completions.create(
            model=f"bad/{remote_model}", messages=HELLO, max_tokens=4
        )
    assert caught.value.status_code == 502
    message = str(caught.value.body)
    assert "'bad'" in message and "key" in message
    assert WRONG_KEY not in message and REMOTE_KEY not in message


def test_an_engine_that_is_down_is_a_502_naming_it(gateway: ServeProcess) -> None:
    response = httpx.post(f"{gateway.base_url}/api/chat", json={"model": "dead/any",
                          "messages": HELLO, "stream": False}, timeout=30)  # fmt: skip
    assert response.status_code == 502
    assert "'dead'" in response.json()["error"]


def test_an_unknown_remote_model_is_a_404_naming_the_engine(gateway: ServeProcess) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        through(gateway).chat.completions.create(model="oa/no-such-model", messages=HELLO)
    assert "'oa'" in str(caught.value.body)


def test_the_remote_key_shows_in_no_log_and_the_log_names_the_engine(
    gateway: ServeProcess, remote_model: str
) -> None:
    through(gateway).chat.completions.create(model=f"oa/{remote_model}", messages=HELLO,
                                             max_tokens=3)  # fmt: skip
    with pytest.raises(openai.APIStatusError):
        through(gateway).chat.completions.create(model=f"bad/{remote_model}", messages=HELLO)
    log = httpx.get(f"{gateway.base_url}/hearth/v1/requests", params={"limit": 200})
    assert REMOTE_KEY not in log.text and WRONG_KEY not in log.text
    assert REMOTE_KEY not in gateway.log_text() and WRONG_KEY not in gateway.log_text()
    entries = log.json()["requests"]
    served = [e for e in entries if e["model"] == f"oa/{remote_model}" and e["status"] == 200]
    assert served and served[0]["engine"] == "oa" and served[0]["completion_tokens"] > 0
    refused = [e for e in entries if e["status"] == 502 and e["model"] == f"bad/{remote_model}"]
    assert refused and refused[0]["engine"] == "bad" and refused[0]["finish_reason"] == "error"


def test_a_remote_killed_mid_stream_ends_with_an_error_event_and_a_restart_recovers(
    gateway: ServeProcess, gateway_config: Path, tiny_model_q8: Path, tmp_path: Path
) -> None:
    port = free_port()
    flaky = serve_on(port, tiny_model_q8, tmp_path)
    try:
        added = hearth_cli(gateway_config, "engines", "add", "flaky", flaky.base_url,
                           "--no-probe")  # fmt: skip
        assert added.returncode == 0, added.stderr
        model = f"flaky/{Path(tiny_model_q8).stem}"
        body = {"model": model, "messages": HELLO, "stream": True, "max_tokens": 450,
                "logit_bias": {str(EOS_ID): -100}}  # fmt: skip
        events: list[str] = []
        with httpx.stream("POST", f"{gateway.base_url}/v1/chat/completions", json=body,
                          timeout=60) as response:  # fmt: skip
            assert response.status_code == 200
            for line in response.iter_lines():
                if not line.startswith("data: "):
                    continue
                events.append(line[len("data: ") :])
                if len(events) == 3:
                    flaky.process.kill()  # the engine dies halfway through the reply
        assert events[-1] == "[DONE]"
        error = json.loads(events[-2])["error"]
        assert "'flaky'" in error["message"] and "broke" in error["message"]
        flaky.process.wait(timeout=10)
        flaky = serve_on(port, tiny_model_q8, tmp_path)
        after = through(gateway).chat.completions.create(model=model, messages=HELLO,
                                                         max_tokens=4)  # fmt: skip
        assert after.choices[0].message.content
    finally:
        flaky.stop()
        hearth_cli(gateway_config, "engines", "rm", "flaky")


class TroubledEngine(BaseHTTPRequestHandler):
    """An OpenAI-compatible server that is busy, broken or cuts its stream, by model name:
    the answers a real engine gives under load or failure, which a healthy Hearth cannot
    be made to give on demand."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/v1/messages/count_tokens":  # as vLLM: no Anthropic counting
            self._send(404, {"detail": "Not Found"})
        elif self.path == "/tokenize":  # vLLM's chat form: 10 per message, 1 for the prompt
            count = 10 * len(body["messages"]) + int(body["add_generation_prompt"])
            self._send(200, {"count": count, "tokens": [], "max_model_len": 4096})
        elif body["model"] == "busy":
            self._send(429, {"error": {"message": "too many requests"}}, {"Retry-After": "7"})
        elif body["model"] == "broken":
            self._send(500, {"error": {"message": "CUDA error: out of memory"}})
        else:  # "cut": a stream that stops after one chunk, with no finish and no [DONE]
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            chunk = {"choices": [{"index": 0, "delta": {"content": "Hel"}}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
            self.close_connection = True

    def _send(self, status: int, payload: object, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def troubled(gateway_config: Path) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), TroubledEngine)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    added = hearth_cli(gateway_config, "engines", "add", "stub", url, "--no-probe")
    assert added.returncode == 0, added.stderr
    yield "stub"
    hearth_cli(gateway_config, "engines", "rm", "stub")
    server.shutdown()


def test_a_busy_engine_is_a_503_with_its_retry_after(gateway: ServeProcess, troubled: str) -> None:
    body = {"model": f"{troubled}/busy", "messages": HELLO}
    response = httpx.post(f"{gateway.base_url}/v1/chat/completions", json=body, timeout=30)
    assert response.status_code == 503 and response.headers["Retry-After"] == "7"
    assert "'stub' is busy" in response.json()["error"]["message"]


def test_an_engine_5xx_is_a_502_naming_it(gateway: ServeProcess, troubled: str) -> None:
    response = httpx.post(f"{gateway.base_url}/v1/messages", json={"model": f"{troubled}/broken",
                          "max_tokens": 5, "messages": HELLO}, timeout=30)  # fmt: skip
    assert response.status_code == 502
    error = response.json()["error"]  # Anthropic's shape at /v1/messages
    assert "'stub'" in error["message"] and "out of memory" in error["message"]


def test_a_stream_cut_off_ends_with_an_error_event_in_each_dialect(
    gateway: ServeProcess, troubled: str
) -> None:
    model = f"{troubled}/cut"
    openai_body = {"model": model, "messages": HELLO, "stream": True}
    with httpx.stream("POST", f"{gateway.base_url}/v1/chat/completions", json=openai_body,
                      timeout=30) as response:  # fmt: skip
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]" and "'stub'" in json.loads(lines[-2][6:])["error"]["message"]
    ollama_body = {"model": model, "messages": HELLO}
    with httpx.stream("POST", f"{gateway.base_url}/api/chat", json=ollama_body,
                      timeout=30) as response:  # fmt: skip
        last = json.loads([line for line in response.iter_lines() if line][-1])
    assert "'stub'" in last["error"]
    anthropic_body = {"model": model, "max_tokens": 5, "messages": HELLO, "stream": True}
    with httpx.stream("POST", f"{gateway.base_url}/v1/messages", json=anthropic_body,
                      timeout=30) as response:  # fmt: skip
        events = [line for line in response.iter_lines() if line.startswith("event: ")]
    assert events[-1] == "event: error"


def test_token_counts_for_a_remote_model_come_from_the_engine(
    gateway: ServeProcess, remote: ServeProcess, remote_model: str, troubled: str
) -> None:
    ask = {
        "messages": HELLO,
        "system": "Answer briefly.",
        "tools": [
            {"name": "get_weather", "description": "Weather", "input_schema": {"type": "object"}}
        ],
    }
    direct = httpx.post(f"{remote.base_url}/v1/messages/count_tokens", headers=remote.headers(),
                        json={"model": remote_model, **ask}).json()["input_tokens"]  # fmt: skip
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key="unused", max_retries=0)
    counted = client.messages.count_tokens(model=f"oa/{remote_model}", **ask)  # type: ignore[arg-type]
    assert counted.input_tokens == direct > 0  # another Hearth counts in Anthropic's form
    assert client.messages.count_tokens(model=f"{troubled}/m", messages=HELLO).input_tokens == 11  # type: ignore[arg-type]
    with pytest.raises(anthropic.BadRequestError) as caught:  # Ollama has no count to ask for
        client.messages.count_tokens(model=f"ol/{remote_model}", messages=HELLO)  # type: ignore[arg-type]
    error = caught.value.body
    assert isinstance(error, dict) and error["type"] == "error"
    assert "'ol'" in error["error"]["message"] and "count" in error["error"]["message"]


# --------------------------------------------------------------------------- llama-server

# --------------------------------------------------------------------------- the CLI


def test_cli_lists_engines_with_health_and_removes_them(
    gateway: ServeProcess, gateway_config: Path, remote: ServeProcess, remote_model: str
) -> None:
    listed = hearth_cli(gateway_config, "engines", "ls", "--json")
    assert listed.returncode == 0, listed.stderr
    engines = {e["name"]: e for e in json.loads(listed.stdout)}
    assert engines["oa"]["ok"] and engines["oa"]["identity"].startswith("Hearth")
    assert engines["oa"]["has_key"] is True
    assert [m["id"] for m in engines["oa"]["models"]] == [f"oa/{remote_model}"]
    assert engines["oa"]["models"][0]["context_length"] == 1024
    assert engines["ol"]["ok"] and [m["id"] for m in engines["ol"]["models"]] == [
        f"ol/{remote_model}"
    ]
    assert not engines["bad"]["ok"] and "401" in engines["bad"]["error"]
    assert not engines["dead"]["ok"] and "connect" in engines["dead"]["error"]
    table = hearth_cli(gateway_config, "engines", "ls").stdout
    assert "oa" in table and f"oa/{remote_model}" in table and "down:" in table
    secrets_file = gateway_config / "secrets.json"
    assert REMOTE_KEY in secrets_file.read_text()  # the key lives in the secret store
    assert REMOTE_KEY not in (gateway_config / "engines.json").read_text()
    added = hearth_cli(gateway_config, "engines", "add", "tmp", remote.base_url,
                       "--api-key-stdin", stdin=REMOTE_KEY + "\n")  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert "Hearth" in added.stdout and f"tmp/{remote_model}" in added.stdout
    again = hearth_cli(gateway_config, "engines", "add", "tmp", remote.base_url, "--no-probe")
    assert again.returncode == 1 and "exists" in again.stderr
    assert hearth_cli(gateway_config, "engines", "rm", "tmp").returncode == 0
    assert "engine-key:tmp" not in secrets_file.read_text()
    gone = hearth_cli(gateway_config, "engines", "rm", "tmp")
    assert gone.returncode == 1 and "No engine" in gone.stderr
