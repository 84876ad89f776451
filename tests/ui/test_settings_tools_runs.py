"""``ServerRuns`` (Settings → Tools' Test): a close that comes while a Test still reads
its secrets (a keyring waiting on its unlock prompt) starts no server afterwards, and
the Test says it was stopped. A real stdio server would have been started otherwise."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path

import pytest

from hearth.config.secret_stores import FileStore
from hearth.tools import ServerState, ServerStatus, ToolCallError
from hearth.tools.mcp_config import SECRET_PREFIX, parse_config
from hearth.ui.pages.settings.tools_runs import ServerRuns
from mcp_testing import TOY, server_processes

pytestmark = pytest.mark.ui

SECRET = "mcp/toy/env/TOY_KEY"


def test_a_close_while_a_test_reads_its_secrets_starts_nothing(arun, tmp_path: Path):
    store = FileStore(tmp_path / "secrets.json")
    store.set(SECRET, "k")
    asked, unlocked = threading.Event(), threading.Event()

    def locked_keyring(name: str) -> str | None:  # runs on the Test's worker thread
        asked.set()
        unlocked.wait(30)
        return store.get(name)

    raw = {"command": sys.executable, "args": [TOY], "env": {"TOY_KEY": SECRET_PREFIX + SECRET}}
    entry = parse_config({"mcpServers": {"toy": raw}}).server("toy")
    seen: list[ServerStatus] = []
    runs = ServerRuns(locked_keyring, seen.append, tmp_path / "logs")

    async def scenario() -> None:
        testing = asyncio.ensure_future(runs.test(entry))
        await arun.wait_until(asked.is_set, 10, "the Test to ask for its secret")
        assert runs.running  # starting: a close must wait for it
        await runs.close()
        unlocked.set()
        with pytest.raises(ToolCallError, match="stopped before it started"):
            await testing
        assert not runs.running and seen[-1].state is ServerState.STOPPED
        assert not server_processes(TOY)

    try:
        arun(scenario())
    finally:
        unlocked.set()
        arun(runs.close())
