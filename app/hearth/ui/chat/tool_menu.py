"""The composer's Tools button: which MCP servers and tools this chat offers its model.

A menu of the configured servers (``mcp.json``, read again on a worker thread each time
the menu opens, "Reading mcp.json…" until the first read is done), each with "All tools"
and its tools to tick (opening the menu starts the servers not yet listed; one that
can't start says why). The choice is the chat's own (``ChatTools``). The button is
off for a model whose chat template lists no tools (``core/model_traits`` via
``library/capabilities``), and the menu warns when the chosen tools' schemas would
take more than a quarter of the model's context. Ticking keeps the menu open.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QMouseEvent
from PySide6.QtWidgets import QMenu, QToolButton
from shiboken6 import isValid

from hearth.library.capabilities import model_capabilities
from hearth.library.gguf_metadata import read_metadata
from hearth.tools.chat_tools import ChatTools
from hearth.tools.mcp_host import ServerStatus
from hearth.ui.chat.view import ChatView
from hearth.ui.style.icons import icon
from hearth.ui.style.tokens import Tokens
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread

log = logging.getLogger(__name__)

NO_TOOLS = "This model's chat template lists no tools, so it can't call them."
NO_SERVERS = "No MCP servers are configured: add one in Settings → Tools (mcp.json)."
READING = "Reading mcp.json…"


def calls_tools(path: Path) -> bool:
    """Whether the GGUF at ``path`` can call tools (its template lists them)."""
    try:
        meta = read_metadata(path)
    except Exception as exc:  # unreadable: say no rather than offer what may fail
        log.info("no capabilities for %s: %s", path, exc)
        return False
    return any(c.key == "tools" for c in model_capabilities(meta))


class _StayOpenMenu(QMenu):
    """Ticking a tool keeps the menu open, to tick the next."""

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        action = self.actionAt(event.position().toPoint())
        if action is not None and action.isCheckable() and action.isEnabled():
            action.trigger()
            return
        super().mouseReleaseEvent(event)


class ToolsMenu(QObject):
    def __init__(
        self,
        tools: ChatTools,
        tasks: TaskSet,
        chat_id: Callable[[], int | None],
        context: Callable[[], int | None],
        parent: ChatView,
    ) -> None:
        """The button goes into ``parent``'s composer."""
        super().__init__(parent)
        self.tools = tools
        self._tasks = tasks
        self._chat_id = chat_id
        self._context = context
        self.supported = True
        self._support: dict[Path, bool] = {}
        self.button = QToolButton(parent)
        self.button.setObjectName("toolsButton")
        self.button.setAccessibleName("Tools")
        self.button.setText("Tools")
        self.button.setAutoRaise(True)
        self.button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
        self.button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.menu = _StayOpenMenu(self.button)
        self.menu.setObjectName("toolsMenu")
        self.menu.aboutToShow.connect(self._about_to_show)
        self.button.setMenu(self.menu)
        tools.on_change = self._server_changed
        self.warning: str | None = None
        self._refresh()
        parent.composer.add_tool(self.button)
        self.set_tokens(parent.tokens)

    def set_tokens(self, t: Tokens) -> None:
        self.button.setIcon(icon("tools", t))

    # ------------------------------------------------------------ the model
    async def check_model(self, path: Path | None, remote: bool) -> bool:
        """Whether the chat's model can call tools: a remote engine's model is offered
        them (its engine decides); a local one if its template lists tools."""
        if remote or path is None:
            supported = remote
        elif path in self._support:
            supported = self._support[path]
        else:
            supported = self._support[path] = await in_thread(calls_tools, path)
        self.supported = supported
        self._refresh()
        return supported

    # ------------------------------------------------------------ the menu
    def _about_to_show(self) -> None:
        self._refresh()  # the model (and its context) may have changed since
        self._rebuild()
        self._tasks.spawn(self._load(), name="mcp-menu-load")

    async def _load(self) -> None:
        """Read ``mcp.json`` again if it changed (on a worker thread: the menu shows
        what it had, or "Reading…", meanwhile), then start the servers not yet listed."""
        await self.tools.reload()
        if not isValid(self.menu):  # the chat closed while the file was read
            return
        if self.menu.isVisible():
            self._rebuild()
        for server in self.tools.servers:
            if server not in self.tools.known and server not in self.tools.errors:
                self._tasks.spawn(self.tools.list_tools(server), name=f"mcp-list-{server}")

    def _server_changed(self, _status: ServerStatus) -> None:
        if self.menu.isVisible():
            self._rebuild()
        self._refresh()

    def _rebuild(self) -> None:
        menu, tools = self.menu, self.tools
        menu.clear()
        if tools.config_error:
            menu.addAction(tools.config_error).setEnabled(False)
        if not self.supported:
            menu.addAction(NO_TOOLS).setEnabled(False)
        servers = tools.servers
        if not tools.loaded:
            menu.addAction(READING).setEnabled(False)
        elif not servers:
            menu.addAction(NO_SERVERS).setEnabled(False)
        for server in servers:
            menu.addSection(server)
            listed = tools.known.get(server)
            if listed is None:
                text = tools.errors.get(server) or "Starting… (its tools are listed once it runs)"
                menu.addAction(text).setEnabled(False)
                continue
            chosen = [t for t in listed if (server, t.name) in tools.choice]
            every = self._check(
                f"All tools of {server}", bool(listed) and len(chosen) == len(listed)
            )
            every.toggled.connect(lambda on, s=server: self._toggle(s, None, on))
            for info in listed:
                action = self._check(info.name, (server, info.name) in tools.choice)
                action.setToolTip(info.summary)
                action.toggled.connect(lambda on, s=server, n=info.name: self._toggle(s, n, on))
        if self.warning:
            menu.addSeparator()
            menu.addAction(self.warning).setEnabled(False)
        menu.setToolTipsVisible(True)

    def _check(self, text: str, checked: bool) -> QAction:
        action = self.menu.addAction(text)
        action.setCheckable(True)
        action.setChecked(checked)
        action.setEnabled(self.supported)
        return action

    def _toggle(self, server: str, tool: str | None, on: bool) -> None:
        self.tools.toggle(server, tool, on, self._chat_id())
        self._refresh()
        if tool is None or self.warning is not None:
            # "All tools" ticks its tools; a warning appears or goes: draw it again
            # once Qt has finished with the action that was clicked.
            asyncio.get_running_loop().call_soon(self._rebuild)

    def _refresh(self) -> None:
        """The button's tooltip and the context warning, from the current choice."""
        count = len(self.tools.choice)
        n_ctx = self._context()
        used = self.tools.schema_tokens()
        self.warning = None
        if count and n_ctx and used > n_ctx // 4:
            self.warning = (
                f"⚠ The chosen tools' descriptions take about {used:,} tokens, more than a "
                f"quarter of this model's context ({n_ctx:,})."
            )
        if not self.supported:
            tip = NO_TOOLS
        elif count:
            tip = f"Tools: {count} offered to the model" + (
                f"\n{self.warning}" if self.warning else ""
            )
        else:
            tip = "Tools: choose MCP tools the model may call (none chosen)"
        self.button.setToolTip(tip)
        self.button.setText(f"Tools ({count})" if count and self.supported else "Tools")

    async def offered_for(self, path: Path | None, remote: bool) -> bool:
        """Whether a turn with this model offers tools: some are chosen and the model
        can call them."""
        if not self.tools.choice:
            return False
        return await self.check_model(path, remote)
