"""``hearth serve --chat-format``: a chosen format wins over the detected one.

The scripted model carries a plain ChatML template, from which detection picks Hermes,
but "answers" with Nemotron's ``<TOOLCALL>[...]</TOOLCALL>`` (control tokens, as in
Nemotron's vocabulary). Started with ``--chat-format nemotron`` the reply comes back
as a structured call, streamed and not, and ``/api/show`` and ``/v1/models`` say the
format was chosen; loaded again with ``chat_format: null`` the server detects Hermes
and the same reply is no call at all.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from gguf_scripted import Family, write_scripted
from hearth.engine.tool_formats import ToolFormat, detect
from hearth.library.library import Library
from server_process import ServeProcess, start_serve

CHATML = (
    "{%- if tools %}<|im_start|>system\nTools: {{ tools | tojson }}<|im_end|>\n{% endif %}"
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
NEMOTRON = Family(controls=("<TOOLCALL>", "</TOOLCALL>"))
REPLY = '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</TOOLCALL>'
WEATHER: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
ASK: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
MODEL = "nemotron-speaker"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServeProcess]:
    path = write_scripted(tmp_path / f"{MODEL}.gguf", template=CHATML, family=NEMOTRON,
                          reply=REPLY, name=MODEL)  # fmt: skip
    Library().import_in_place(path)
    serve = start_serve(path, tmp_path, "--chat-format", "nemotron", ctx=1024, parallel=1)
    try:
        yield serve
    finally:
        serve.stop()


def _family(url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The format fields of ``/api/show`` details and ``/v1/models`` meta."""
    details = httpx.post(f"{url}/api/show", json={"model": MODEL}).json()["details"]
    meta = httpx.get(f"{url}/v1/models").json()["data"][0]["meta"]
    return details, meta


def _load(url: str, **settings: Any) -> None:
    started = httpx.post(f"{url}/hearth/v1/load", json={"model": MODEL, **settings})
    assert started.status_code == 202, started.text
    with httpx.stream("GET", f"{url}/hearth/v1/events", timeout=60) as response:
        states = [json.loads(line[6:]) for line in response.iter_lines()
                  if line.startswith("data: ")]  # fmt: skip
    assert states[-1]["state"] == "ready", states


def test_the_chosen_format_parses_what_detection_would_not(server: ServeProcess) -> None:
    assert detect(CHATML) is ToolFormat.HERMES  # what the server would pick by itself
    client = openai.OpenAI(base_url=f"{server.base_url}/v1", api_key="unused", max_retries=0)
    reply = client.chat.completions.create(
        model=MODEL, messages=ASK, tools=[WEATHER], temperature=0, max_tokens=60
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert not choice.message.content

    stream = client.chat.completions.create(
        model=MODEL, messages=ASK, tools=[WEATHER], temperature=0, max_tokens=60, stream=True
    )
    names, arguments, text = [], "", ""
    for chunk in stream:
        delta = chunk.choices[0].delta if chunk.choices else None
        if delta is None:
            continue
        text += delta.content or ""
        for call in delta.tool_calls or []:
            if call.function and call.function.name:
                names.append(call.function.name)
            arguments += (call.function.arguments or "") if call.function else ""
    assert names == ["get_weather"] and json.loads(arguments) == {"city": "Paris"}
    assert "TOOLCALL" not in text

    details, meta = _family(server.base_url)
    for fields in (details, meta):
        assert fields["tool_format"] == "nemotron"
        assert fields["tool_format_source"] == "chosen"


def test_without_the_choice_the_format_is_detected(server: ServeProcess) -> None:
    url = server.base_url
    _load(url, chat_format=None)
    details, meta = _family(url)
    for fields in (details, meta):
        assert fields["tool_format"] == "hermes"
        assert fields["tool_format_source"] == "detected"
    body = {"model": MODEL, "messages": ASK, "tools": [WEATHER], "temperature": 0,
            "max_tokens": 60}  # fmt: skip
    message = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=60).json()
    assert not message["choices"][0]["message"].get("tool_calls")

    bad = httpx.post(f"{url}/hearth/v1/load", json={"model": MODEL, "chat_format": "qwen9"})
    assert bad.status_code == 400 and "chat_format must be one of" in bad.text
