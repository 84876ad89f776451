"""The real coding agents for tests: Claude Code and Codex CLI, from the npm registry.

Installed once with ``npm install --prefix`` into a cache (``~/.cache/hearth-test/agents``,
or ``HEARTH_AGENTS_DIR``) and reused; a machine without node, or offline on the first
run, gets a reason to skip instead. Each agent runs in its own fresh home, so the
developer's own settings and logins are never read or touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

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
