"""llama-server as a remote engine behind Hearth (issue 15), where a binary is at hand.

Build it from the llama-cpp-python sdist's vendored llama.cpp (``bench/README.md``) and
point ``HEARTH_LLAMA_SERVER`` at it (or put ``llama-server`` on PATH: tests/llama_server.py);
skipped otherwise.
The gateway and its config come from ``tests/conftest.py``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from gguf_factory import EOS_ID
from llama_server import LLAMA_SERVER, running_llama_server
from remote_testing import GREEDY, HELLO, REMOTE_KEY, WEATHER_TOOL, hearth_cli, through
from server_process import ServeProcess


@pytest.fixture(scope="module")
def llama_remote(
    tiny_model_q8: Path,
    gateway: ServeProcess,
    gateway_config: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    """llama-server (HEARTH_LLAMA_SERVER, or on PATH) as engine ``ls``; its URL."""
    if not LLAMA_SERVER:
        pytest.skip("no llama-server binary (set HEARTH_LLAMA_SERVER)")
    flags = ("-np", "2", "-c", "2048", "-t", "2", "--alias", "tiny", "--api-key", REMOTE_KEY,
             "--jinja")  # fmt: skip
    log_dir = tmp_path_factory.mktemp("llama-server")
    with running_llama_server(tiny_model_q8, log_dir, *flags) as url:
        try:
            added = hearth_cli(gateway_config, "engines", "add", "ls", url, "--api-key-stdin",
                               "--no-probe", stdin=REMOTE_KEY + "\n")  # fmt: skip
            assert added.returncode == 0, added.stderr
            yield url
        finally:
            hearth_cli(gateway_config, "engines", "rm", "ls")


def test_llama_server_as_an_engine_in_every_dialect(
    gateway: ServeProcess, llama_remote: str
) -> None:
    direct_client = openai.OpenAI(base_url=f"{llama_remote}/v1", api_key=REMOTE_KEY, max_retries=0)
    expected = direct_client.chat.completions.create(model="tiny", messages=HELLO, **GREEDY)  # type: ignore[arg-type]
    text = expected.choices[0].message.content
    assert text
    client = through(gateway)
    whole = client.chat.completions.create(model="ls/tiny", messages=HELLO, **GREEDY)  # type: ignore[arg-type]
    assert whole.choices[0].message.content == text
    stream = client.chat.completions.create(model="ls/tiny", messages=HELLO, stream=True, **GREEDY)  # type: ignore[arg-type]
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == text
    options = {"temperature": 0, "num_predict": GREEDY["max_tokens"], "seed": 7}
    body = {"model": "ls/tiny", "messages": HELLO, "stream": False, "options": options}
    ollama = httpx.post(f"{gateway.base_url}/api/chat", json=body, timeout=60).json()
    assert ollama["message"]["content"] == text
    claude = anthropic.Anthropic(base_url=gateway.base_url, api_key="unused", max_retries=0)
    message = claude.messages.create(model="ls/tiny", max_tokens=GREEDY["max_tokens"],
                                     messages=HELLO, extra_body={"temperature": 0})  # type: ignore[arg-type]  # fmt: skip
    assert message.content[0].type == "text" and message.content[0].text == text


def test_llama_server_is_probed_for_what_it_is_and_its_context(
    gateway: ServeProcess, gateway_config: Path, llama_remote: str
) -> None:
    listed = hearth_cli(gateway_config, "engines", "ls", "--json")
    engine = {e["name"]: e for e in json.loads(listed.stdout)}["ls"]
    assert engine["ok"] and engine["identity"].startswith("llama-server"), engine
    (model,) = engine["models"]
    assert model["id"] == "ls/tiny" and model["context_length"] == 1024  # 2048 over 2 slots


def test_llama_server_tool_requests_and_responses_through_the_gateway(
    gateway: ServeProcess, llama_remote: str
) -> None:
    ask = {
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [WEATHER_TOOL],
        "tool_choice": "required",
        "temperature": 0,
        "max_tokens": 64,
    }
    direct_client = openai.OpenAI(base_url=f"{llama_remote}/v1", api_key=REMOTE_KEY, max_retries=0)
    expected = direct_client.chat.completions.create(model="tiny", **ask)  # type: ignore[call-overload]
    got = through(gateway).chat.completions.create(model="ls/tiny", **ask)  # type: ignore[call-overload]
    # The tiny model's template knows no tools, so llama-server answers in text: what
    # matters is that the gateway hands over the engine's own answer, as it is.
    assert got.choices[0].message.content == expected.choices[0].message.content
    assert got.choices[0].message.tool_calls == expected.choices[0].message.tool_calls
    reply = through(gateway).responses.create(
        model="ls/tiny", input="Hello", max_output_tokens=16, temperature=0
    )
    assert reply.status in ("completed", "incomplete") and reply.output_text


def test_leaving_a_llama_server_stream_early_frees_its_slot(
    gateway: ServeProcess, llama_remote: str
) -> None:
    body = {"model": "ls/tiny", "messages": HELLO, "stream": True, "max_tokens": 800,
            "logit_bias": {str(EOS_ID): -100}}  # fmt: skip
    with httpx.stream("POST", f"{gateway.base_url}/v1/chat/completions", json=body,
                      timeout=60) as response:  # fmt: skip
        for line in response.iter_lines():
            if line.startswith("data: {") and "content" in line:
                break
    headers = {"Authorization": f"Bearer {REMOTE_KEY}"}
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        slots = httpx.get(f"{llama_remote}/slots", headers=headers, timeout=5).json()
        if not any(slot["is_processing"] for slot in slots):
            return
        time.sleep(0.05)
    pytest.fail("llama-server kept generating after the client left")
