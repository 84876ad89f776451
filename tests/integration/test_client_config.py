"""``hearth config`` prints config that really works against the running endpoint."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys

import httpx
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


def _config_with_key(url: str, key: str | None) -> subprocess.CompletedProcess[str]:
    given = ["--api-key", key] if key else []
    command = [sys.executable, "-m", "hearth", "config", "curl", "--url", url, *given]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_a_missing_or_refused_key_is_named(tiny_model_q8, tmp_path):
    from server_process import start_serve

    server = start_serve(tiny_model_q8, tmp_path, api_key="right")
    try:
        runs = {key: _config_with_key(server.base_url, key) for key in (None, "wrong", "right")}
    finally:
        server.stop()
    assert runs[None].returncode == 1 and "pass --api-key" in runs[None].stderr
    assert runs["wrong"].returncode == 1 and "refused the API key" in runs["wrong"].stderr
    assert runs["right"].returncode == 0 and "hearth-tiny-Q8_0" in runs["right"].stdout
    assert "right" not in runs["right"].stdout  # the key itself is never printed


# --------------------------------------------------------------------------- coding tools


def exported(text: str) -> dict[str, str]:
    """The ``export NAME=value`` lines of a shell snippet, unquoted as a shell would."""
    env = {}
    for line in text.splitlines():
        if line.startswith("export "):
            name, _, value = line[len("export ") :].partition("=")
            env[name] = shlex.split(value)[0]
    return env


def settings_json(text: str) -> dict[str, str]:
    """A settings.json fragment with its ``//`` comment lines (VS Code allows them)."""
    return json.loads("\n".join(ln for ln in text.splitlines() if not ln.startswith("//")))


def test_claude_code_env_talks_to_messages(serve_q8):
    """The printed variables, used the way Claude Code uses them: base URL, bearer
    token and model into Anthropic's own SDK."""
    import anthropic

    text = hearth_config("claude-code", serve_q8.base_url)
    env = exported(text)
    assert env["ANTHROPIC_BASE_URL"] == serve_q8.base_url
    assert env["ANTHROPIC_MODEL"] == env["ANTHROPIC_SMALL_FAST_MODEL"] == "hearth-tiny-Q8_0"
    assert "--ctx 65536" in text  # the 512-token test context is far too small for it
    client = anthropic.Anthropic(
        base_url=env["ANTHROPIC_BASE_URL"], auth_token=env["ANTHROPIC_AUTH_TOKEN"], api_key=None
    )
    reply = client.messages.create(
        model=env["ANTHROPIC_MODEL"],
        max_tokens=4,
        messages=[{"role": "user", "content": "say hi"}],
    )
    assert reply.content[0].type == "text" and reply.usage.output_tokens > 0


def test_codex_config_is_a_responses_provider(serve_q8):
    import openai

    toml = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    config = toml.loads(hearth_config("codex", serve_q8.base_url))
    provider = config["model_providers"][config["model_provider"]]
    assert provider["wire_api"] == "responses"
    assert provider["base_url"] == f"{serve_q8.base_url}/v1"
    assert "env_key" not in provider  # no key needed: Codex must not demand one
    client = openai.OpenAI(base_url=provider["base_url"], api_key="unused")
    reply = client.responses.create(model=config["model"], input="say hi", max_output_tokens=4)
    assert reply.status in ("completed", "incomplete") and reply.output_text


def test_copilot_setting_points_its_ollama_provider_at_hearth(serve_q8):
    """What Copilot Chat's Ollama provider does with the endpoint, in its order and
    without a key: check the version, list models, read one's context and
    capabilities, then chat on the OpenAI route."""
    endpoint = settings_json(hearth_config("copilot", serve_q8.base_url))[
        "github.copilot.chat.byok.ollamaEndpoint"
    ]
    version = httpx.get(f"{endpoint}/api/version", timeout=10).json()["version"]
    assert tuple(int(p) for p in version.lstrip("v").split("-")[0].split(".")) >= (0, 6, 4)
    models = [m["model"] for m in httpx.get(f"{endpoint}/api/tags", timeout=10).json()["models"]]
    assert models
    show = httpx.post(f"{endpoint}/api/show", json={"model": models[0]}, timeout=10).json()
    info = show["model_info"]
    assert info[f"{info['general.architecture']}.context_length"] > 0
    assert isinstance(show["capabilities"], list)
    chat = httpx.post(
        f"{endpoint}/v1/chat/completions",
        json={
            "model": models[0],
            "messages": [{"role": "user", "content": "say hi"}],
            "max_tokens": 4,
            "stream": True,
        },
        timeout=30,
    )
    assert chat.status_code == 200 and chat.text.rstrip().endswith("data: [DONE]")


def test_llama_vscode_settings_reach_infill_and_chat(serve_q8):
    settings = settings_json(hearth_config("llama-vscode", serve_q8.base_url))
    body = {  # what llama.vscode sends for a completion
        "input_prefix": "def add(a, b):\n    ",
        "input_suffix": "\n",
        "input_extra": [{"filename": "util.py", "text": "def sub(a, b):\n    return a - b\n"}],
        "prompt": "return",
        "n_predict": 4,
        "top_k": 40,
        "top_p": 0.99,
        "stream": False,
        "samplers": ["top_k", "top_p", "infill"],
        "cache_prompt": True,
        "t_max_prompt_ms": 500,
        "t_max_predict_ms": 1000,
        "n_indent": 4,
    }
    reply = httpx.post(f"{settings['llama-vscode.endpoint']}/infill", json=body, timeout=30)
    assert reply.status_code == 200 and "timings" in reply.json()
    chat = httpx.post(
        f"{settings['llama-vscode.endpoint_chat']}/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4},
        timeout=30,
    )
    assert chat.status_code == 200
