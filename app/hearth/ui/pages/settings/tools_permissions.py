"""The standing permissions ("Always allow T of S", given in the chat's approval) as a
list under Settings → Tools, each revocable. The store is ``tools/permissions.py``'s
``ToolPermissions``, read and written on worker threads; the chat reads the same file
again when it changed, so a revoked tool is asked about at its next call."""

from __future__ import annotations

import asyncio
import time

import shiboken6
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from hearth.tools.permissions import Permission, ToolPermissions, ToolPermissionsError
from hearth.ui.style.tokens import SPACE
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread
from hearth.ui.widgets.section import Message

EMPTY = (
    "No tool is always allowed: the chat asks before every call. Choose \"Always allow\" "
    "in a chat's approval to add one tool of one server here."
)
READING = "Reading the standing permissions…"
_KEY_ROLE = Qt.ItemDataRole.UserRole
LIST_PX = 110


class PermissionsList(QWidget):
    """``entries`` mirrors the file; ``revoke_selected`` takes one away."""

    def __init__(self, permissions: ToolPermissions, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.permissions = permissions
        self.entries: list[Permission] = []
        self.loaded = False  # until the first read: "Reading…"
        self._tasks = TaskSet()
        self._reads = 0  # each read's number: only the newest one is shown
        title = QLabel("Always allowed", self)
        title.setProperty("role", "subtitle")
        self.empty_label = QLabel(EMPTY, self)
        self.empty_label.setObjectName("permissionsEmpty")
        self.empty_label.setProperty("role", "muted")
        self.empty_label.setWordWrap(True)
        self.list = QListWidget(self)
        self.list.setAccessibleName("Always allowed tools")
        self.list.setObjectName("toolPermissions")
        self.revoke_button = QPushButton("Revoke", self)
        self.revoke_button.setAccessibleName("Revoke the selected permission")
        self.revoke_button.clicked.connect(self.revoke_selected)
        self.list.currentRowChanged.connect(
            lambda row: self.revoke_button.setEnabled(row >= 0 and bool(self.entries))
        )
        self.message = Message(self)
        buttons = QHBoxLayout()
        buttons.addWidget(self.revoke_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, SPACE["s"], 0, 0)
        layout.setSpacing(SPACE["s"])
        layout.addWidget(title)
        layout.addWidget(self.empty_label)
        layout.addWidget(self.list)
        layout.addLayout(buttons)
        layout.addWidget(self.message)
        self._show()

    def refresh(self) -> asyncio.Task[None]:
        return self._tasks.spawn(self._refresh(), name="tool-permissions-refresh")

    async def _refresh(self) -> None:
        self._reads += 1
        number = self._reads
        entries = await in_thread(self.permissions.entries)
        if number != self._reads or not shiboken6.isValid(self.list):
            return  # a newer read is under way, or the page closed meanwhile
        self.entries, self.loaded = entries, True
        self._show()

    def _show(self) -> None:
        self.list.clear()
        for p in self.entries:
            when = time.strftime("%Y-%m-%d", time.localtime(p.granted))
            item = QListWidgetItem(f"{p.tool} of {p.server} (since {when})")
            item.setData(_KEY_ROLE, (p.server, p.tool))
            self.list.addItem(item)
        rows = sum(self.list.sizeHintForRow(r) for r in range(self.list.count()))
        self.list.setFixedHeight(min(LIST_PX, rows + 2 * self.list.frameWidth() + 4))
        empty = not self.entries
        self.empty_label.setText(EMPTY if self.loaded else READING)
        self.empty_label.setVisible(empty)
        self.list.setVisible(not empty)
        self.revoke_button.setVisible(not empty)
        self.revoke_button.setEnabled(self.list.currentRow() >= 0)

    def revoke_selected(self) -> asyncio.Task[None] | None:
        item = self.list.currentItem()
        if item is None:
            return None
        server, tool = item.data(_KEY_ROLE)
        return self._tasks.spawn(self._revoke(str(server), str(tool)), name="tool-revoke")

    async def _revoke(self, server: str, tool: str) -> None:
        try:
            await in_thread(self.permissions.revoke, server, tool)
        except ToolPermissionsError as exc:
            self.message.setText(str(exc))
            return
        self.message.setText(f"Revoked: the chat asks again before {tool} of {server} runs.")
        await self._refresh()

    async def revoke_server(self, server: str) -> None:
        """Take away every permission of a removed server (a new server of the same
        name must not inherit them)."""
        for p in await in_thread(self.permissions.entries):
            if p.server == server:
                await in_thread(self.permissions.revoke, p.server, p.tool)
        await self._refresh()
