"""The chat's side of the MCP host: which servers and tools a chat offers its model.

One ``ChatTools`` per chat window. ``reload`` reads ``mcp.json`` again when the file
changed (Settings → Tools edits it), on a worker thread (the chat runs on the GUI's
loop, which must never wait on the disk), and then replaces its ``McpHost``, so a server
added or removed there is offered at the next turn. The properties only report what the
last ``reload`` found (``loaded`` says whether there was one). It remembers each
server's tools once listed (a server stopped when idle keeps its place in the menu) and
the chosen tools of the chat shown (each saved chat keeps its own, through
``on_choice``; a new chat starts with the last chat's). Qt-free: the chat's menu and the
tool loop (``chat_loop.py``) use it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from hearth.tools.chat_loop import CALL_TIMEOUT_S, STEP_LIMIT, ToolCatalog
from hearth.tools.mcp_config import (
    McpConfig,
    McpConfigError,
    SecretLookup,
    default_config_path,
    load_config,
)
from hearth.tools.mcp_host import McpHost, ServerState, ServerStatus, ToolCallError, ToolInfo
from hearth.tools.off_loop import off_loop
from hearth.tools.permissions import ToolPermissions

log = logging.getLogger(__name__)

Choice = frozenset[tuple[str, str]]
"""The chosen tools, as (server, tool) pairs."""

_Stamp = tuple[int, int] | None  # a file's (mtime, size); None: there is no file
_UNREAD = object()  # no stamp is this: the first reload always reads


class ChatTools:
    def __init__(
        self,
        config_path: Path | None = None,
        permissions: ToolPermissions | None = None,
        *,
        secrets: SecretLookup | None = None,
        log_dir: Path | None = None,
        call_timeout: float = CALL_TIMEOUT_S,
        step_limit: int = STEP_LIMIT,
    ) -> None:
        self.config_path = config_path or default_config_path()
        self.permissions = permissions or ToolPermissions()
        self.call_timeout = call_timeout
        self.step_limit = step_limit
        self.on_change: Callable[[ServerStatus], None] = lambda _status: None
        self.on_choice: Callable[[int, Choice], None] = lambda _chat, _choice: None
        self._secrets = secrets
        self._log_dir = log_dir
        self._stamp: _Stamp = None
        self._loaded = False
        self._config = McpConfig()
        self.config_error: str | None = None
        self._host: McpHost | None = None
        self._retired: list[McpHost] = []
        self.known: dict[str, tuple[ToolInfo, ...]] = {}
        self.errors: dict[str, str] = {}  # servers that would not start, and why
        self.choice: Choice = frozenset()

    # ------------------------------------------------------------ configuration
    @property
    def config(self) -> McpConfig:
        """``mcp.json`` as the last :meth:`reload` read it (no file read here)."""
        return self._config

    @property
    def loaded(self) -> bool:
        """Whether ``mcp.json`` has been read once (until then the menu says so)."""
        return self._loaded

    @property
    def host(self) -> McpHost:
        """The host of the servers the last :meth:`reload` found."""
        if self._host is None:  # before the first reload: no servers yet
            self._host = self._new_host()
        return self._host

    async def reload(self) -> McpConfig:
        """Read ``mcp.json`` again if it changed on disk (on a worker thread), and then
        replace the host; the old one's servers stop at the next :meth:`list_tools`."""
        known = self._stamp if self._loaded else _UNREAD
        stamp, config, error = await off_loop(self._read, self.config_path, known)
        if config is None or (self._loaded and stamp == self._stamp):
            return self._config  # unchanged (or another reload got there first)
        self._stamp, self._config, self.config_error = stamp, config, error
        self._loaded = True
        if self._host is not None:
            self._retired.append(self._host)
        self._host = self._new_host()
        names = {e.name for e in config.enabled}
        self.known = {k: v for k, v in self.known.items() if k in names}
        return config

    @staticmethod
    def _read(path: Path, known: object) -> tuple[_Stamp, McpConfig | None, str | None]:
        """The file's stamp, and its servers unless the stamp is ``known`` (blocking)."""
        try:
            stat = os.stat(path)
            stamp: _Stamp = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            stamp = None
        if stamp == known:
            return stamp, None, None
        try:
            return stamp, load_config(path), None
        except McpConfigError as exc:
            return stamp, McpConfig(path=path), str(exc)

    def _new_host(self) -> McpHost:
        return McpHost(
            self._config,
            secrets=self._secrets,
            log_dir=self._log_dir,
            call_timeout=self.call_timeout,
            on_change=self._changed,
        )

    @property
    def servers(self) -> list[str]:
        return [e.name for e in self.config.enabled]

    def _changed(self, status: ServerStatus) -> None:
        if status.tools:
            self.known[status.name] = status.tools
            self.errors.pop(status.name, None)
        elif status.error:
            self.errors[status.name] = f"The MCP server {status.name!r} failed: {status.error}"
        self.on_change(status)

    async def list_tools(self, server: str) -> tuple[ToolInfo, ...]:
        """The server's tools (starting it); a server that can't start lists none, and
        ``errors`` says why."""
        await self.reload()
        host = self.host
        await self._close_retired()
        try:
            tools = await host.tools(server)
        except (ToolCallError, McpConfigError) as exc:
            self.errors[server] = str(exc)
            return ()
        self.known[server] = tools
        return tools

    # ------------------------------------------------------------ the chat's choice
    def set_choice(self, choice: Iterable[tuple[str, str]], chat: int | None) -> None:
        """Offer ``choice`` in the chat shown; a saved chat keeps it (``on_choice``)."""
        self.choice = frozenset(choice)
        if chat is not None:
            self.on_choice(chat, self.choice)

    def open_chat(self, stored: Iterable[tuple[str, str]]) -> None:
        """A saved chat is shown: the tools it keeps (a new chat keeps the last ones)."""
        self.choice = frozenset(stored)

    def saved(self, chat: int) -> None:
        """A new chat got its id: the tools it was sent with are its own."""
        self.on_choice(chat, self.choice)

    def toggle(self, server: str, tool: str | None, on: bool, chat: int | None) -> None:
        """Choose a tool (or, with ``tool`` None, every known tool of ``server``)."""
        names = [tool] if tool is not None else [t.name for t in self.known.get(server, ())]
        pairs = {(server, name) for name in names}
        self.set_choice(self.choice | pairs if on else self.choice - pairs, chat)

    async def catalog(self) -> ToolCatalog:
        """The chosen tools of servers that start (each started now if needed)."""
        await self.reload()
        wanted = {server for server, _tool in self.choice}
        tools: list[ToolInfo] = []
        for server in self.servers:
            if server not in wanted:
                continue
            listed = await self.list_tools(server)
            tools.extend(t for t in listed if (server, t.name) in self.choice)
        return ToolCatalog(tools)

    def schema_tokens(self, choice: Choice | None = None) -> int:
        """About how many tokens the chosen tools' schemas take (4 characters each)."""
        chosen = self.choice if choice is None else choice
        tools = [t for ts in self.known.values() for t in ts if (t.server, t.name) in chosen]
        return ToolCatalog(tools).schema_chars() // 4

    async def _close_retired(self) -> None:
        """Stop the servers of a host replaced after ``mcp.json`` changed."""
        retired, self._retired = self._retired, []
        for host in retired:
            await host.close()

    @property
    def running(self) -> bool:
        """Whether a server is running or starting (closing the app stops it first)."""
        hosts = [*self._retired, *([self._host] if self._host else [])]
        idle = (ServerState.STOPPED, ServerState.FAILED)
        return any(s.state not in idle for host in hosts for s in host.statuses())

    async def aclose(self) -> None:
        hosts = [*self._retired, *([self._host] if self._host else [])]
        self._retired, self._host = [], None
        for host in hosts:
            await host.close()
