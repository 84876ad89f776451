"""The real coding agents for tests: Claude Code and Codex CLI, from the npm registry.

Installed once with ``npm install --prefix`` into a cache (``~/.cache/hearth-test/agents``,
or ``HEARTH_AGENTS_DIR``) and reused; a machine without node, or offline on the first
run, gets a reason to skip instead. Each agent runs in its own fresh home, so the
developer's own settings and logins are never read or touched.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

PACKAGES = ("@anthropic-ai/claude-code", "@openai/codex")
BINARIES = ("claude", "codex")
INSTALL_TIMEOUT_S = 600


def agents_dir() -> Path:
    default = Path.home() / ".cache" / "hearth-test" / "agents"
    return Path(os.environ.get("HEARTH_AGENTS_DIR", default))


def install_agents() -> Path | str:
    """The folder holding ``claude`` and ``codex``, installing them the first time;
    or why they cannot be had here."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node and npm are not installed"
    prefix = agents_dir()
    bin_dir = prefix / "node_modules" / ".bin"
    if not all((bin_dir / name).exists() for name in BINARIES):
        prefix.mkdir(parents=True, exist_ok=True)
        command = ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund"]
        try:
            result = subprocess.run(
                [*command, *PACKAGES], capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            return "npm install of the agents timed out (offline?)"
        if result.returncode != 0:
            return f"npm install of the agents failed (offline?): {result.stderr[-500:]}"
    for name in BINARIES:
        try:
            probe = subprocess.run(
                [str(bin_dir / name), "--version"], capture_output=True, text=True, timeout=60
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{name} does not run here: {exc}"
        if probe.returncode != 0:
            return f"{name} does not run here: {probe.stderr[-500:]}"
    return bin_dir


def agent_env(home: Path, **values: str) -> dict[str, str]:
    """A clean environment for an agent: its own home, no keys of the developer's."""
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
    env = {name: os.environ[name] for name in keep if name in os.environ}
    home.mkdir(parents=True, exist_ok=True)
    return {**env, "HOME": str(home), "USERPROFILE": str(home), **values}


RUN_TIMEOUT_S = 240


def printed_config(client: str, base_url: str, key: str) -> str:
    """What ``hearth config CLIENT`` prints for a user, with the key filled in."""
    result = subprocess.run(
        [sys.executable, "-m", "hearth", "config", client, "--url", base_url, "--api-key", key],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.replace("<your Hearth API key>", key)


def claude_env(base_url: str, key: str, home: Path) -> dict[str, str]:
    """Claude Code's environment from the ``export`` lines ``hearth config`` prints."""
    values = {}
    for line in printed_config("claude-code", base_url, key).splitlines():
        if line.startswith("export "):
            name, _, value = line[len("export ") :].partition("=")
            values[name] = shlex.split(value)[0]
    return agent_env(home, **values)


def run_claude(agent_bin: Path, env: dict[str, str], cwd: Path) -> tuple[int, dict[str, Any]]:
    """``claude -p "say hi"``: its exit code and its JSON result."""
    result = subprocess.run(
        [str(agent_bin / "claude"), "-p", "say hi", "--output-format", "json"],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=RUN_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.stdout.strip(), result.stderr
    return result.returncode, json.loads(result.stdout)


def run_codex(agent_bin: Path, base_url: str, key: str, tmp_path: Path) -> list[dict[str, Any]]:
    """``codex exec "say hi"`` with the ``config.toml`` that ``hearth config`` prints;
    its JSON events (the run must succeed)."""
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(printed_config("codex", base_url, key))
    env = agent_env(tmp_path / "home", CODEX_HOME=str(codex_home), HEARTH_API_KEY=key)
    result = subprocess.run(
        [str(agent_bin / "codex"), "exec", "--skip-git-repo-check", "--json", "say hi"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=RUN_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def codex_said(events: list[dict[str, Any]]) -> list[str]:
    """The agent messages of a finished Codex turn."""
    kinds = [event["type"] for event in events]
    assert "turn.completed" in kinds, kinds
    return [e["item"]["text"] for e in events if e.get("item", {}).get("type") == "agent_message"]
