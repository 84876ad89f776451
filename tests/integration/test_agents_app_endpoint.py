"""The real Claude Code and Codex CLI through the GUI's endpoint, not ``hearth serve``.

The app's worker listens privately for the app and opens the public endpoint as a second
listener with its own policy (``server/listeners.py``); here it asks for a key made with
``hearth keys create`` (kept in the secret store: a file keyring for the test). Each agent
is configured with exactly what ``hearth config`` prints, as a user would.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import gguf_factory
from agent_clis import RUN_TIMEOUT_S, claude_env, codex_said, run_claude, run_codex
from hearth.config.api_keys import create_key
from hearth.supervisor import EndpointOptions, LoadOptions, Supervisor
from server_process import free_port

# Agents' prompts run to 20k-60k tokens: the context they need.
AGENT_LOAD = LoadOptions(n_ctx=65536, n_parallel=1, flash_attention="on")


@pytest.mark.agents
@pytest.mark.timeout(2 * RUN_TIMEOUT_S + 180)
def test_claude_code_and_codex_through_the_apps_endpoint(
    agent_bin: Path, file_keyring: None, tmp_path: Path
) -> None:
    model = gguf_factory.write_scripted_llama(tmp_path / "hearth-scripted.gguf")
    key = create_key("agents").key
    port = free_port()
    url = f"http://127.0.0.1:{port}"

    async def scenario() -> None:
        sup = Supervisor(log_dir=tmp_path / "logs")
        sup.endpoint = EndpointOptions(enabled=True, port=port, require_key=True)
        try:
            await sup.start(model, AGENT_LOAD)
            assert sup.endpoint_port == port and sup.endpoint_error is None
            env = claude_env(url, key, tmp_path / "claude-home")
            code, result = await asyncio.to_thread(run_claude, agent_bin, env, tmp_path)
            assert code == 0, result
            assert result["is_error"] is False and result["result"] == " Hello!"

            codex_dir = tmp_path / "codex-run"
            codex_dir.mkdir()
            events = await asyncio.to_thread(run_codex, agent_bin, url, key, codex_dir)
            assert codex_said(events) == [" Hello!"]

            wrong = {**env, "ANTHROPIC_AUTH_TOKEN": "hk-wrong"}
            code, result = await asyncio.to_thread(run_claude, agent_bin, wrong, tmp_path)
            assert code == 1 and result["is_error"] is True  # the key is checked
        finally:
            await sup.stop()
        log = "".join(p.read_text(errors="replace") for p in (tmp_path / "logs").glob("*"))
        assert key not in log  # the key never reaches the worker's log

    asyncio.run(asyncio.wait_for(scenario(), 2 * RUN_TIMEOUT_S + 120))
