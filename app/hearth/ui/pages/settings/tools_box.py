"""Settings → "Tools (MCP servers)": the servers of ``mcp.json`` as a list, with Add,
Edit, Test, Remove, an on/off switch per server, the file as JSON, an offer to import
Claude Desktop's, Cursor's and LM Studio's servers, and the standing permissions.

Everything that touches the disk or the secret store (the keyring can block) runs on
worker threads; a Test starts the server through an ``McpHost`` on the app's asyncio
loop (the child process and its pipes are asynchronous), so the Qt thread never waits.
Its secrets are read on a thread first, and a missing one is the row's reason. The
State column is that host's: not started, running with N tools, or failed and why.
The rows themselves are drawn by ``tools_table.ServerTable``; this box owns the
servers (``listing``) and every action on them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtGui import QHideEvent, QShowEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMessageBox, QPushButton, QWidget
from shiboken6 import isValid

from hearth.config.secrets import SecretStoreError
from hearth.tools import McpConfig, McpConfigError, ServerStatus, ToolCallError
from hearth.tools.mcp_file import McpFile
from hearth.tools.mcp_import import ImportOffer, ImportSource
from hearth.tools.permissions import ToolPermissions, ToolPermissionsError
from hearth.ui.pages.settings.tools_dialog import ServerDialog
from hearth.ui.pages.settings.tools_json import JsonDialog
from hearth.ui.pages.settings.tools_listing import Listing, read_listing
from hearth.ui.pages.settings.tools_offers import Offers
from hearth.ui.pages.settings.tools_permissions import PermissionsList
from hearth.ui.pages.settings.tools_runs import ServerRuns, state_text
from hearth.ui.pages.settings.tools_table import ServerTable
from hearth.ui.style.tokens import SPACE
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread
from hearth.ui.widgets.section import Message, Section

log = logging.getLogger(__name__)

DESCRIPTION = (
    "MCP servers give a chat's model tools to call: a clock, a search, your files. The "
    "chat asks before each call. Keys go to the secret store, never into mcp.json."
)
EMPTY = "No MCP servers yet. Add a server by the command that runs it or by its URL."
READING = "Reading mcp.json and the secret store…"


class ToolsBox(Section):
    """The list and its actions; ``config`` mirrors ``mcp.json``."""

    def __init__(
        self,
        mcp_file: McpFile,
        permissions: ToolPermissions,
        parent: QWidget | None = None,
        *,
        import_sources: Callable[[], list[ImportSource]] | None = None,
        log_dir: Path | None = None,
    ) -> None:
        """Secrets are read through ``mcp_file`` (its store; blocking, so on threads);
        ``import_sources`` finds the other apps' files (default: their places here)."""
        super().__init__("Tools (MCP servers)", DESCRIPTION, parent, icon_kind="tools")
        self.setObjectName("toolsBox")
        self.mcp_file = mcp_file
        self.import_sources = import_sources
        self.listing = Listing()
        self.loaded = False  # until the first read: "Reading…", and no edits
        self.runs = ServerRuns(mcp_file.secret, self._status, log_dir)
        self.dialog: ServerDialog | JsonDialog | None = None
        self.task: asyncio.Task[None] | None = None  # the last removal
        self._tasks = TaskSet()
        self._reading: asyncio.Task[None] | None = None  # the refresh in flight
        self._reads = 0  # each read's number: only the newest one is shown
        self._stale = True  # read when next shown

        self.empty_label = QLabel(EMPTY, self)
        self.empty_label.setObjectName("toolsEmpty")
        self.empty_label.setProperty("role", "muted")
        self.empty_label.setWordWrap(True)
        self.offers = Offers(self)
        self.offers.import_chosen.connect(self.import_offer)
        self.offers.seal_chosen.connect(self.seal_plain)
        self.table = ServerTable(self)
        self.table.switched.connect(self.set_enabled)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.table.itemDoubleClicked.connect(lambda _item: self.edit_selected())
        self.add_button = QPushButton("Add a server…", self)
        self.add_button.setAccessibleName("Add an MCP server")
        self.add_button.clicked.connect(self.open_add)
        self.edit_button = QPushButton("Edit…", self)
        self.edit_button.setAccessibleName("Edit the selected MCP server")
        self.edit_button.clicked.connect(self.edit_selected)
        self.test_button = QPushButton("Test", self)
        self.test_button.setAccessibleName("Start the selected MCP server and list its tools")
        self.test_button.clicked.connect(self.test_selected)
        self.remove_button = QPushButton("Remove", self)
        self.remove_button.setAccessibleName("Remove the selected MCP server")
        self.remove_button.clicked.connect(self.remove_selected)
        self.json_button = QPushButton("Edit as JSON…", self)
        self.json_button.setAccessibleName("Edit mcp.json as JSON")
        self.json_button.clicked.connect(self.open_json)
        self.message = Message(self)
        self.message.setObjectName("toolsMessage")
        self.permissions = PermissionsList(permissions, self)
        buttons = QHBoxLayout()
        buttons.setSpacing(SPACE["s"])
        for button in (self.add_button, self.edit_button, self.test_button, self.remove_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(self.json_button)
        self.body.addWidget(self.empty_label)
        self.body.addWidget(self.offers)
        self.body.addWidget(self.table)
        self.body.addLayout(buttons)
        self.body.addWidget(self.message)
        self.body.addWidget(self.permissions)
        self._show_rows()

    # ------------------------------------------------------------------ the list
    def refresh(self) -> asyncio.Future[None]:
        """Read the list again: now if the box is shown, else when it is next shown (the
        keyring is not asked at the app's start for a page nobody opened)."""
        if not self.isVisible():
            self._stale = True
            done: asyncio.Future[None] = asyncio.get_event_loop().create_future()
            done.set_result(None)
            return done
        self._stale = False
        if self._reading is not None and not self._reading.done():
            return self._reading  # one read at a time (it began just now)
        self._reading = self._tasks.spawn(self._refresh(), name="tools-refresh")
        return self._reading

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if self._stale:
            QTimer.singleShot(0, self._refresh_if_shown)  # once the page is laid out

    def hideEvent(self, event: QHideEvent) -> None:  # noqa: N802 - Qt override
        """Hidden (another page, or the window closing): a read in flight is cancelled,
        not left pending, and done again when the box is next shown."""
        super().hideEvent(event)
        reading, self._reading = self._reading, None
        if reading is not None and not reading.done() and not reading.get_loop().is_closed():
            reading.cancel()
            self._stale = True

    def _refresh_if_shown(self) -> None:
        if isValid(self) and self._stale and self.isVisible():
            self.refresh()

    async def _refresh(self) -> None:
        """Read the file, the secret store and the permissions on threads; the list
        shows the newest read (an older one finishing later is dropped)."""
        self._reads += 1
        number = self._reads
        try:
            listing = await in_thread(read_listing, self.mcp_file, self.import_sources)
        except Exception as exc:  # said on the box, which stays usable (never "Reading…")
            log.exception("Settings → Tools could not read its list")
            listing = Listing(error=f"The MCP servers could not be read: {exc}")
        if number != self._reads or not isValid(self.table):
            return
        self.listing, self.loaded = listing, True
        if self.listing.error:
            self.message.setText(self.listing.error)
        self._show_rows()
        self.offers.show_offers(self.listing.offers, primary=not self.config.servers)
        self.offers.show_plain(self.listing.plain)
        await self.permissions.refresh()

    @property
    def config(self) -> McpConfig:
        return self.listing.config

    def _show_rows(self) -> None:
        entries = self.config.servers
        self.table.show_servers(entries, self.state_text)
        empty = not entries
        self.empty_label.setText(EMPTY if self.loaded else READING)
        self.empty_label.setVisible(empty and not self.listing.error)  # a broken file isn't empty
        self.table.setVisible(not empty)
        for button in (self.add_button, self.json_button):  # edits need the file read first
            button.setEnabled(self.loaded)
        self.table.fit_height()
        primary = empty and self.loaded  # the next step when there is none
        if self.add_button.property("primary") != primary:
            self.add_button.setProperty("primary", primary)
            self.add_button.style().unpolish(self.add_button)
            self.add_button.style().polish(self.add_button)
        self._selection_changed()

    def state_text(self, name: str) -> str:
        entry = self.config.server(name)
        return state_text(entry, self.runs.statuses.get(name), self.listing.missing.get(name, []))

    def selected(self) -> str | None:
        return self.table.selected()

    def select(self, name: str) -> None:
        self.table.select(name)

    def _selection_changed(self) -> None:
        chosen = self.selected() is not None
        for button in (self.edit_button, self.test_button, self.remove_button):
            button.setEnabled(chosen)

    # ------------------------------------------------------------------ editing
    def open_add(self) -> ServerDialog:
        return self._open(None)

    def edit_selected(self) -> ServerDialog | None:
        name = self.selected()
        return self._open(name) if name is not None else None

    def _open(self, name: str | None) -> ServerDialog:
        raw = self.listing.servers.get(name) if name is not None else None
        dialog = ServerDialog(self.mcp_file, self, name=name, raw=raw)
        dialog.saved.connect(self._saved)
        self.dialog = dialog
        dialog.open()
        return dialog

    def _saved(self, name: str) -> None:
        self.message.setText(f"Saved '{name}'. Test starts it and lists its tools.")
        self._tasks.spawn(self._after_change(name), name="tools-saved")

    async def _after_change(self, name: str | None = None) -> None:
        if name is not None:
            await self.runs.stop(name)  # a changed server starts again with its new entry
        await self._refresh()
        if name is not None:
            self.select(name)

    def open_json(self) -> asyncio.Task[JsonDialog | None]:
        return self._tasks.spawn(self._open_json(), name="tools-json")

    async def _open_json(self) -> JsonDialog | None:
        try:
            text = await in_thread(self.mcp_file.text)
        except McpConfigError:  # a broken file is shown as it is, to be fixed here
            text = await in_thread(self.mcp_file.path.read_text, "utf-8", "replace")
        dialog = JsonDialog(self.mcp_file, text, self)
        dialog.saved.connect(self._json_saved)
        self.dialog = dialog
        dialog.open()
        return dialog

    def _json_saved(self) -> None:
        self.message.setText("Saved mcp.json.")
        self._tasks.spawn(self._restart_all(), name="tools-json-saved")

    async def _restart_all(self) -> None:
        await self.runs.close()
        await self._refresh()

    def set_enabled(self, name: str, on: bool) -> asyncio.Task[None]:
        return self._tasks.spawn(self._set_enabled(name, on), name="tools-enable")

    async def _set_enabled(self, name: str, on: bool) -> None:
        try:
            await in_thread(self.mcp_file.set_enabled, name, on)
        except (McpConfigError, SecretStoreError) as exc:
            self.message.setText(f"Not changed: {getattr(exc, 'message', None) or exc}")
        else:
            self.message.setText(f"'{name}' is {'on' if on else 'off'}.")
        await self._after_change(name)

    def remove_selected(self) -> QMessageBox | None:
        """Ask first (its secrets and permissions go too); ``task`` runs the removal."""
        name = self.selected()
        if name is None:
            return None
        ask = QMessageBox(
            QMessageBox.Icon.Question,
            "Remove MCP server",
            f"Remove '{name}', its stored keys and its standing permissions? Chats "
            "keep the calls they made.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            self,
        )
        ask.setDefaultButton(QMessageBox.StandardButton.Cancel)
        yes = ask.button(QMessageBox.StandardButton.Yes)
        yes.setText("Remove")
        yes.clicked.connect(lambda: self._confirmed(name))
        ask.open()
        return ask

    def _confirmed(self, name: str) -> None:
        self.task = self._tasks.spawn(self._remove(name), name="tools-remove")

    async def _remove(self, name: str) -> None:
        await self.runs.stop(name)
        try:
            await in_thread(self.mcp_file.remove, name)
            await self.permissions.revoke_server(name)
        except (McpConfigError, SecretStoreError, ToolPermissionsError) as exc:
            self.message.setText(f"Not removed: {getattr(exc, 'message', None) or exc}")
            return
        self.message.setText(f"Removed '{name}'.")
        await self._refresh()

    def import_offer(self, offer: ImportOffer) -> asyncio.Task[None]:
        return self._tasks.spawn(self._import(offer), name="tools-import")

    async def _import(self, offer: ImportOffer) -> None:
        fresh = {k: v for k, v in offer.servers.items() if k not in self.listing.servers}
        try:
            await in_thread(self.mcp_file.add_all, fresh)
        except (McpConfigError, ValueError, SecretStoreError) as exc:
            self.message.setText(f"Not imported: {getattr(exc, 'message', None) or exc}")
            return
        skipped = [*offer.skipped, *(k for k in offer.servers if k not in fresh)]
        said = f"; skipped, already here: {', '.join(skipped)}" if skipped else ""
        names = ", ".join(fresh) or "nothing new"
        self.message.setText(f"Imported from {offer.source.app}: {names}{said}.")
        await self._refresh()

    def seal_plain(self) -> asyncio.Task[None]:
        return self._tasks.spawn(self._seal_plain(), name="tools-seal")

    async def _seal_plain(self) -> None:
        """Save the file as it is: the save moves its secrets into the store."""
        try:
            await in_thread(lambda: self.mcp_file.save(self.mcp_file.read()))
        except (McpConfigError, ValueError, SecretStoreError) as exc:
            self.message.setText(f"Not moved: {getattr(exc, 'message', None) or exc}")
            return
        self.message.setText("Moved; mcp.json now refers to the secret store.")
        await self._refresh()

    # ------------------------------------------------------------------ testing
    def test_selected(self) -> asyncio.Task[None] | None:
        name = self.selected()
        if name is None:
            return None
        return self._tasks.spawn(self.test(name), name="tools-test")

    async def test(self, name: str) -> None:
        """Start ``name`` and list its tools (``ServerRuns``: off the Qt thread)."""
        self.message.setText(f"Starting '{name}'…")
        try:
            tools = await self.runs.test(self.config.server(name))
        except ToolCallError as exc:
            self.message.setText(str(exc))
            return
        listed = "; ".join(f"{t.name}: {t.summary}" if t.summary else t.name for t in tools)
        self.message.setText(f"'{name}' runs, with {len(tools)} tools. {listed}")

    def _status(self, status: ServerStatus) -> None:
        if not isValid(self.table):  # the page is gone; its servers are being stopped
            return
        if status.name in self.table.names:
            self.table.show_state(status.name, self.state_text(status.name))

    @property
    def running(self) -> bool:
        """Whether a server a Test started may still be up (the window stops it)."""
        return self.runs.running

    async def close_servers(self) -> None:
        """Stop every server a Test started (the window is closing, or a test ends)."""
        await self.runs.close()
