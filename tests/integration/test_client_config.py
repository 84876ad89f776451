"""``hearth config`` prints config that really works against the running endpoint."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import yaml


def hearth_config(client: str, url: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "hearth", "config", client, "--url", url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_continue_config_has_chat_and_autocomplete(serve_q8):
    config = yaml.safe_load(hearth_config("continue", serve_q8.base_url))
    roles = {role for model in config["models"] for role in model["roles"]}
    assert {"chat", "autocomplete"} <= roles
    assert all(m["apiBase"] == f"{serve_q8.base_url}/v1" for m in config["models"])
    assert all(m["model"] == "hearth-tiny-Q8_0" for m in config["models"])


def test_openai_snippet_runs(serve_q8):
    snippet = hearth_config("openai", serve_q8.base_url).replace(
        'content": "Hello!"}]', 'content": "Hello!"}], max_tokens=4'
    )
    result = subprocess.run(
        [sys.executable, "-c", snippet], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_line_runs(serve_q8):
    line = hearth_config("curl", serve_q8.base_url).replace(
        '"Hello!"}]}', '"Hello!"}], "max_tokens": 4}'
    )
    result = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert json.loads(result.stdout)["object"] == "chat.completion"


def test_no_endpoint_is_a_clear_error():
    result = subprocess.run(
        [sys.executable, "-m", "hearth", "config", "curl", "--url", "http://127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "hearth serve" in result.stderr
