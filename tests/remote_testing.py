"""Shared pieces of the remote-engine tests: the keys, requests, the real ``hearth`` CLI
with a gateway's config folder, and clients for asking an engine directly or through
the gateway (the fixtures that start them are in ``tests/conftest.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import openai

from server_process import ServeProcess, start_serve

REMOTE_KEY = "sk-remote-engine-key-0123456789"
WRONG_KEY = "sk-wrong-engine-key-9876543210"
HELLO = [{"role": "user", "content": "Hello there"}]
GREEDY = {"temperature": 0, "max_tokens": 12, "seed": 7}
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 4}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}


def hearth_cli(config_dir: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """The real ``hearth`` CLI with the gateway's config folder and the file secret store."""
    env = {**os.environ, "HEARTH_CONFIG_DIR": str(config_dir), "HEARTH_SECRET_STORE": "file"}
    return subprocess.run(
        [sys.executable, "-m", "hearth", *args],
        input=stdin, capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


def serve_on(port: int, model: Path, log_dir: Path) -> ServeProcess:
    """``hearth serve`` on a given port (the same one again after a restart)."""
    return start_serve(model, log_dir, "--port", str(port), parallel=1)


def direct(remote: ServeProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{remote.base_url}/v1", api_key=REMOTE_KEY, max_retries=0)


def through(gateway: ServeProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gateway.base_url}/v1", api_key="unused", max_retries=0)


def direct_text(remote: ServeProcess, model: str, **extra: object) -> str:
    ask = {**GREEDY, **extra}
    reply = direct(remote).chat.completions.create(model=model, messages=HELLO, **ask)  # type: ignore[arg-type]
    return reply.choices[0].message.content or ""
