"""A remote engine killed (``kill -9``) while it streams (issue 21): every dialect's
official client sees an error, never a reply that looks whole, and the gateway's
request log names the engine that dropped each request.

A second ``hearth serve`` is the engine, registered at the gateway through the real
CLI as an OpenAI-compatible engine or as an Ollama one. One request per dialect runs at
once (one slot each, so none waits behind another); once every streaming client has
its first text and the engine has every request in a slot, the engine is killed.

An engine that dies between its finish reason and ``[DONE]`` cannot be killed on cue,
so a scripted one (:class:`DiesBeforeDone`) closes its stream there.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anthropic
import httpx
import ollama
import openai
import pytest

from gguf_factory import EOS_ID
from remote_testing import HELLO, hearth_cli, through
from server_process import ServeProcess, start_serve

LONG = 1800  # tokens: far more than streams before the kill (the context is 2048)
GREEDY = {"temperature": 0}
NO_EOS = {str(EOS_ID): -100}

Client = Callable[[ServeProcess, str, threading.Event], str]


def openai_chat_stream(gateway: ServeProcess, model: str, started: threading.Event) -> str:
    stream = through(gateway).chat.completions.create(
        model=model, messages=HELLO, stream=True, max_tokens=LONG, logit_bias=NO_EOS, **GREEDY,  # type: ignore[arg-type]
    )  # fmt: skip
    with pytest.raises(openai.APIError) as caught, stream:  # its stream's error event
        for chunk in stream:
            assert not chunk.choices or chunk.choices[0].finish_reason is None  # never "stop"
            if chunk.choices and chunk.choices[0].delta.content:
                started.set()
    return caught.value.message


def openai_completions_stream(gateway: ServeProcess, model: str, started: threading.Event) -> str:
    stream = through(gateway).completions.create(
        model=model, prompt="Once upon", stream=True, max_tokens=LONG, logit_bias=NO_EOS, **GREEDY,  # type: ignore[arg-type]
    )  # fmt: skip
    with pytest.raises(openai.APIError) as caught, stream:
        for chunk in stream:
            assert not chunk.choices or chunk.choices[0].finish_reason is None
            if chunk.choices and chunk.choices[0].text:
                started.set()
    return caught.value.message


def anthropic_stream(gateway: ServeProcess, model: str, started: threading.Event) -> str:
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key="unused", max_retries=0)
    stream = client.messages.stream(model=model, max_tokens=LONG, messages=HELLO,  # type: ignore[arg-type]
                                    extra_body=GREEDY)  # fmt: skip
    with pytest.raises(anthropic.APIStatusError) as caught, stream as events:  # "error" event
        for _ in events.text_stream:
            started.set()
    return str(caught.value)


def ollama_stream(gateway: ServeProcess, model: str, started: threading.Event) -> str:
    client = ollama.Client(host=gateway.base_url)
    with pytest.raises(ollama.ResponseError) as caught:  # its stream's {"error": ...} line
        for part in client.chat(model=model, messages=HELLO, stream=True,
                                options={"num_predict": LONG, **GREEDY}):  # fmt: skip
            assert not part.done
            if part.message.content:
                started.set()
    return caught.value.error


def responses_stream(gateway: ServeProcess, model: str, started: threading.Event) -> str:
    kinds: list[str] = []
    message = ""
    with through(gateway).responses.create(model=model, input="Hello there", stream=True,
                                           max_output_tokens=LONG, **GREEDY) as stream:  # fmt: skip
        for event in stream:
            kinds.append(event.type)
            if event.type == "response.output_text.delta":
                started.set()
            if event.type == "response.failed":
                assert event.response.error is not None
                message = event.response.error.message
    assert kinds[-1] == "response.failed" and "response.completed" not in kinds
    return message


def openai_chat_whole(gateway: ServeProcess, model: str, started: threading.Event) -> str:
    started.set()  # no text comes before the end: the engine's busy slot says it began
    with pytest.raises(openai.APIStatusError) as caught:
        through(gateway).chat.completions.create(model=model, messages=HELLO, max_tokens=LONG,
                                                 logit_bias=NO_EOS, **GREEDY)  # type: ignore[arg-type]  # fmt: skip
    assert caught.value.status_code == 502
    return caught.value.message


def anthropic_whole(gateway: ServeProcess, model: str, started: threading.Event) -> str:
    started.set()
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key="unused", max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as caught:
        client.messages.create(model=model, max_tokens=LONG, messages=HELLO, extra_body=GREEDY)  # type: ignore[arg-type]
    body = caught.value.body
    assert caught.value.status_code == 502 and isinstance(body, dict) and body["type"] == "error"
    return str(body["error"]["message"])


def ollama_whole(gateway: ServeProcess, model: str, started: threading.Event) -> str:
    started.set()
    client = ollama.Client(host=gateway.base_url)
    with pytest.raises(ollama.ResponseError) as caught:
        client.chat(model=model, messages=HELLO, stream=False,
                    options={"num_predict": LONG, **GREEDY})  # fmt: skip
    assert caught.value.status_code == 502
    return caught.value.error


CLIENTS: tuple[Client, ...] = (
    openai_chat_stream, openai_completions_stream, anthropic_stream, ollama_stream,
    responses_stream, openai_chat_whole, anthropic_whole, ollama_whole,
)  # fmt: skip


def busy_slots(engine: ServeProcess) -> int:
    slots = httpx.get(f"{engine.base_url}/hearth/v1/status", timeout=5).json()["slots"]
    return sum(1 for slot in slots if slot["busy"])


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting until {what}")
        time.sleep(0.02)


@pytest.mark.parametrize("kind", ["openai", "ollama"])
def test_an_engine_killed_mid_reply_is_an_error_in_every_dialect_and_in_the_log(
    gateway: ServeProcess, gateway_config: Path, tiny_model_q8: Path, tmp_path: Path, kind: str
) -> None:
    engine = start_serve(tiny_model_q8, tmp_path, ctx=2048, parallel=len(CLIENTS))
    name = f"doomed-{kind}"
    url = f"{engine.base_url}/v1" if kind == "openai" else engine.base_url
    added = hearth_cli(gateway_config, "engines", "add", name, url, "--kind", kind, "--no-probe")
    assert added.returncode == 0, added.stderr
    model = f"{name}/{tiny_model_q8.stem}"
    started = [threading.Event() for _ in CLIENTS]
    try:
        with ThreadPoolExecutor(len(CLIENTS)) as pool:
            seen = [pool.submit(client, gateway, model, event)
                    for client, event in zip(CLIENTS, started, strict=True)]  # fmt: skip
            wait_for(lambda: all(e.is_set() for e in started) or any(f.done() for f in seen),
                     "every streaming client has text")  # fmt: skip
            wait_for(lambda: busy_slots(engine) == len(CLIENTS) or any(f.done() for f in seen),
                     "the engine generates every reply")  # fmt: skip
            assert not any(f.done() for f in seen), "a request ended before the engine died"
            engine.process.kill()  # kill -9, halfway through every reply
            messages = {c.__name__: f.result(timeout=60)
                        for c, f in zip(CLIENTS, seen, strict=True)}  # fmt: skip
        for client, message in messages.items():
            assert f"'{name}'" in message, f"{client}: {message}"

        def logged() -> list[dict[str, object]]:
            entries = httpx.get(f"{gateway.base_url}/hearth/v1/requests",
                                params={"limit": 200}).json()["requests"]  # fmt: skip
            return [e for e in entries if e["model"] == model]

        wait_for(lambda: len(logged()) == len(CLIENTS), "the request log has every request")
        for entry in logged():
            assert entry["engine"] == name and entry["finish_reason"] == "error", entry
            assert f"Remote engine '{name}'" in str(entry["error"]), entry
    finally:
        engine.stop()
        hearth_cli(gateway_config, "engines", "rm", name)


class DiesBeforeDone(BaseHTTPRequestHandler):
    """An OpenAI-compatible engine whose stream stops after the finish reason, before
    the usage and ``[DONE]``: the body runs until the connection closes (HTTP/1.0), so
    the close itself looks like a normal end to HTTP."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        text = {"index": 0, "delta": {"content": "Hel"}}
        finish = {"index": 0, "delta": {}, "finish_reason": "stop"}
        for choice in (text, finish):
            self.wfile.write(f"data: {json.dumps({'choices': [choice]})}\n\n".encode())
        self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def dies_before_done(gateway_config: Path) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), DiesBeforeDone)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    added = hearth_cli(gateway_config, "engines", "add", "nodone", url, "--no-probe")
    assert added.returncode == 0, added.stderr
    yield "nodone"
    hearth_cli(gateway_config, "engines", "rm", "nodone")
    server.shutdown()


def test_a_stream_that_stops_after_its_finish_reason_but_before_done_is_an_error(
    gateway: ServeProcess, dies_before_done: str
) -> None:
    model = f"{dies_before_done}/m"
    stream = through(gateway).chat.completions.create(model=model, messages=HELLO, stream=True)
    reasons = []
    with pytest.raises(openai.APIError) as caught, stream:
        for chunk in stream:
            reasons += [c.finish_reason for c in chunk.choices if c.finish_reason]
    assert not reasons  # the client is never told the reply ended normally
    assert "'nodone'" in caught.value.message and "[DONE]" in caught.value.message
    with pytest.raises(openai.APIStatusError) as whole:
        through(gateway).chat.completions.create(model=model, messages=HELLO)
    assert whole.value.status_code == 502 and "'nodone'" in whole.value.message

    def logged() -> list[dict[str, object]]:
        entries = httpx.get(f"{gateway.base_url}/hearth/v1/requests").json()["requests"]
        return [e for e in entries if e["model"] == model]

    wait_for(lambda: len(logged()) == 2, "the request log has both requests")
    assert {(e["engine"], e["finish_reason"]) for e in logged()} == {("nodone", "error")}
