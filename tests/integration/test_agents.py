"""The real coding agents against ``hearth serve --api-key``: Claude Code (Anthropic
Messages) and Codex CLI (OpenAI Responses), configured with what ``hearth config``
prints, on a scripted model that answers " Hello!" (their prompts run to 20k-60k
tokens: a random model would ramble on for minutes). Skipped without node; the npm
install is cached (see agent_clis). Also the request shapes these agents send, checked
without node."""

from __future__ import annotations

import anthropic
import openai
import pytest

import gguf_factory
from agent_clis import RUN_TIMEOUT_S, claude_env, codex_said, run_claude, run_codex
from server_process import start_serve

KEY = "agent-test-key"


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
    env = claude_env(serve_agents.base_url, KEY, tmp_path / "home")
    code, result = run_claude(agent_bin, env, tmp_path)
    assert code == 0, result
    assert result["is_error"] is False and result["result"] == " Hello!"


@pytest.mark.agents
@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_codex_completes_a_turn(agent_bin, serve_agents, tmp_path):
    events = run_codex(agent_bin, serve_agents.base_url, KEY, tmp_path)
    said = codex_said(events)
    assert said == [" Hello!"]


@pytest.mark.agents
@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_claude_code_understands_a_context_too_small(agent_bin, tmp_path):
    """Hearth's 4k default context cannot hold Claude Code's prompt: the 400 says so in
    Anthropic's words, and Claude Code shows "Prompt is too long" with both numbers."""
    model = gguf_factory.write_scripted_llama(tmp_path / "scripted.gguf")
    server = start_serve(model, tmp_path, ctx=4096, parallel=1, api_key=KEY)
    try:
        env = claude_env(server.base_url, KEY, tmp_path / "home")
        code, result = run_claude(agent_bin, env, tmp_path)
    finally:
        server.stop()
    assert code == 1 and result["is_error"] is True
    message = str(result["result"])
    assert message.startswith("Prompt is too long") and "limit 4096" in message, message
