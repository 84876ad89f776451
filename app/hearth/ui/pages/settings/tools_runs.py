"""The servers Settings → Tools started with its Test button: one ``McpHost`` each on
the app's asyncio loop, and the statuses its State column shows.

A server's secrets are read on a worker thread before it starts (the keyring can
block; the host would read them on the loop), so a missing one fails the start with its
name before any process runs. A tested server stays up a little, then its host stops it;
closing the main window stops it at once (``close``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hearth.config.paths import default_paths
from hearth.config.secrets import SecretStoreError
from hearth.tools import (
    McpConfig,
    McpConfigError,
    McpHost,
    McpServerEntry,
    ServerState,
    ServerStatus,
    ToolCallError,
    ToolInfo,
)
from hearth.tools.mcp_config import SecretLookup
from hearth.tools.mcp_secrets import references
from hearth.ui.threads import in_thread

log = logging.getLogger(__name__)

TEST_START_S = 60.0  # a first `uvx`/`npx` run downloads the server
TEST_IDLE_S = 120.0


def state_text(entry: McpServerEntry, status: ServerStatus | None, missing: list[str]) -> str:
    """The State cell: turned off, can't start (a secret), not started, starting,
    running with N tools, or failed and why."""
    if entry.disabled:
        return "turned off"
    stopped = status is None or status.state is ServerState.STOPPED
    if missing and stopped:
        return f"can't start: the secret {missing[0]} is not in the secret store"
    if status is None or status.state is ServerState.STOPPED:
        return "not started"
    if status.state is ServerState.STARTING:
        return "starting…"
    if status.state is ServerState.RUNNING:
        count = len(status.tools)
        return f"running · {count} tool{'' if count == 1 else 's'}"
    return f"failed: {status.error or 'no reason given'}"


def missing_secrets(
    servers: Mapping[str, Mapping[str, Any]], lookup: SecretLookup
) -> dict[str, list[str]]:
    """The secrets each server refers to that the store lacks (blocking: on a thread).
    Such a server can't start, and its row says so before anyone tries."""
    found: dict[str, list[str]] = {}
    for name, raw in servers.items():
        try:
            absent = [n for n in sorted(references(raw)) if lookup(n) is None]
        except SecretStoreError as exc:
            log.warning("can't check the secrets of MCP server %s: %s", name, exc)
            continue
        if absent:
            found[name] = absent
    return found


class ServerRuns:
    """``statuses`` by server; ``on_change`` hears each change (on the loop)."""

    def __init__(
        self,
        secrets: SecretLookup,
        on_change: Callable[[ServerStatus], None],
        log_dir: Path | None = None,
    ) -> None:
        self.secrets = secrets
        self.on_change = on_change
        self.log_dir = log_dir or default_paths().logs_dir  # a failed start's last words
        self.statuses: dict[str, ServerStatus] = {}
        self._hosts: dict[str, McpHost] = {}
        self._closes = 0  # each close's number: a Test reading its secrets then gives up

    async def test(self, entry: McpServerEntry) -> tuple[ToolInfo, ...]:
        """Start ``entry`` afresh and list its tools; a ``ToolCallError`` says why not
        (and the status holds the reason)."""
        name = entry.name
        await self.stop(name)
        self._set(ServerStatus(name, ServerState.STARTING))
        closes = self._closes
        try:
            resolved = await in_thread(entry.with_secrets, self.secrets)
        except (McpConfigError, SecretStoreError) as exc:
            reason = getattr(exc, "message", None) or str(exc)
            self._set(ServerStatus(name, ServerState.FAILED, reason))
            raise ToolCallError(name, f"The MCP server {name!r} can't start: {reason}") from exc
        if closes != self._closes:  # closed meanwhile (the window, say): start nothing
            self._set(ServerStatus(name, ServerState.STOPPED))
            raise ToolCallError(name, f"The MCP server {name!r} was stopped before it started.")
        host = McpHost(
            McpConfig((resolved,)), log_dir=self.log_dir, start_timeout=TEST_START_S,
            idle_stop=TEST_IDLE_S, on_change=self._set,
        )  # fmt: skip
        self._hosts[name] = host
        return await host.tools(name)

    def _set(self, status: ServerStatus) -> None:
        self.statuses[status.name] = status
        self.on_change(status)

    async def stop(self, name: str) -> None:
        host = self._hosts.pop(name, None)
        if host is not None:
            await host.close()
        self.statuses.pop(name, None)

    async def close(self) -> None:
        """Stop every server a Test started, all at once (each stop may wait seconds
        for its process to exit), and any Test still reading its secrets."""
        self._closes += 1
        await asyncio.gather(*(self.stop(name) for name in list(self._hosts)))

    @property
    def running(self) -> bool:
        """Whether a tested server is starting or running (a process may be up)."""
        live = (ServerState.STARTING, ServerState.RUNNING)
        return any(status.state in live for status in self.statuses.values())
