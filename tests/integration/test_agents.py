"""The real coding agents against ``hearth serve --api-key``: Claude Code (Anthropic
Messages) and Codex CLI (OpenAI Responses), configured with what ``hearth config``
prints, on a scripted model that answers " Hello!" (their prompts run to 20k-60k
tokens: a random model would ramble on for minutes). Skipped without node; the npm
install is cached (see agent_clis). Also the request shapes these agents send, checked
without node."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import anthropic
import openai
import pytest

import gguf_factory
from agent_clis import agent_env
from server_process import ServeProcess, start_serve

KEY = "agent-test-key"
RUN_TIMEOUT_S = 240


def printed_config(client: str, server: ServeProcess) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "hearth", "config", client, "--url", server.base_url,
         "--api-key", KEY],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.replace("<your Hearth API key>", KEY)


def claude_env(server: ServeProcess, home: Path) -> dict[str, str]:
    values = {}
    for line in printed_config("claude-code", server).splitlines():
        if line.startswith("export "):
            name, _, value = line[len("export ") :].partition("=")
            values[name] = shlex.split(value)[0]
    return agent_env(home, **values)


def run_claude(agent_bin: Path, env: dict[str, str], cwd: Path) -> tuple[int, dict[str, object]]:
    result = subprocess.run(
        [str(agent_bin / "claude"), "-p", "say hi", "--output-format", "json"],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=RUN_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.stdout.strip(), result.stderr
    return result.returncode, json.loads(result.stdout)


# --------------------------------------------------------------------------- shapes


def test_claude_code_shapes_system_turns_and_uncapped_tool_bounds(serve_q8):
    """Claude Code sends a system turn after the user's, and tools that allow 512 KiB of
    text (maxLength 524288, past what a grammar can unroll): both are taken, and a
    forced call to such a tool still gets a grammar."""
    client = anthropic.Anthropic(base_url=serve_q8.base_url, api_key="unused")
    tool = {
        "name": "run",
        "description": "Run a script",
        "input_schema": {
            "type": "object",
            "properties": {"script": {"type": "string", "maxLength": 524288}},
            "required": ["script"],
        },
    }
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "say hi"}]},
        {"role": "system", "content": "The user is on Linux."},  # type: ignore[misc,list-item]
    ]
    reply = client.messages.create(
        model="hearth-tiny-Q8_0", max_tokens=4, messages=messages, tools=[tool]
    )
    assert reply.usage.output_tokens > 0
    forced = client.messages.create(
        model="hearth-tiny-Q8_0",
        max_tokens=40,
        messages=messages,
        tools=[tool],
        tool_choice={"type": "tool", "name": "run"},
    )
    assert forced.content[-1].type == "tool_use" or forced.stop_reason == "max_tokens"


def test_codex_shapes_hosted_tools_and_namespaces_are_left_out(serve_q8):
    """Codex CLI offers web_search and namespaces of its own tools on every turn."""
    client = openai.OpenAI(base_url=f"{serve_q8.base_url}/v1", api_key="unused")
    function = {"type": "function", "name": "exec_command", "parameters": {"type": "object"}}
    namespace = {"type": "namespace", "name": "multi_agent_v1", "tools": [function]}
    reply = client.responses.create(
        model="hearth-tiny-Q8_0",
        input="say hi",
        max_output_tokens=4,
        tools=[function, namespace, {"type": "web_search"}],  # type: ignore[list-item]
    )
    assert reply.status in ("completed", "incomplete")


# --------------------------------------------------------------------------- real agents


@pytest.mark.agents
@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_claude_code_completes_a_turn(agent_bin, serve_agents, tmp_path):
    code, result = run_claude(agent_bin, claude_env(serve_agents, tmp_path / "home"), tmp_path)
    assert code == 0, result
    assert result["is_error"] is False and result["result"] == " Hello!"


@pytest.mark.agents
@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_codex_completes_a_turn(agent_bin, serve_agents, tmp_path):
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(printed_config("codex", serve_agents))
    env = agent_env(tmp_path / "home", CODEX_HOME=str(codex_home), HEARTH_API_KEY=KEY)
    result = subprocess.run(
        [str(agent_bin / "codex"), "exec", "--skip-git-repo-check", "--json", "say hi"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=RUN_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    kinds = [event["type"] for event in events]
    assert "turn.completed" in kinds, kinds
    said = [e["item"]["text"] for e in events if e.get("item", {}).get("type") == "agent_message"]
    assert said == [" Hello!"]


@pytest.mark.agents
@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_claude_code_understands_a_context_too_small(agent_bin, tmp_path):
    """Hearth's 4k default context cannot hold Claude Code's prompt: the 400 says so in
    Anthropic's words, and Claude Code shows "Prompt is too long" with both numbers."""
    model = gguf_factory.write_scripted_llama(tmp_path / "scripted.gguf")
    server = start_serve(model, tmp_path, ctx=4096, parallel=1, api_key=KEY)
    try:
        code, result = run_claude(agent_bin, claude_env(server, tmp_path / "home"), tmp_path)
    finally:
        server.stop()
    assert code == 1 and result["is_error"] is True
    message = str(result["result"])
    assert message.startswith("Prompt is too long") and "limit 4096" in message, message
