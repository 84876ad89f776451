"""The conversation list: search (FTS5), new, rename, delete and export.

The sidebar talks to the store through ``AsyncChatStore`` (never on the Qt thread)
and to the current chat through ``ChatController``. Searching is debounced; while the
search box has text, the list shows matching conversations with a snippet.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from PySide6.QtCore import QEvent, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from hearth.chats import AsyncChatStore, ChatStore, Conversation, SearchHit
from hearth.ui.chat.list_rows import ChatRowDelegate, when
from hearth.ui.chat.session import ChatController
from hearth.ui.style.icons import icon
from hearth.ui.style.theme import tokens_for
from hearth.ui.style.tokens import SPACE
from hearth.ui.tasks import TaskSet

log = logging.getLogger(__name__)

SEARCH_DEBOUNCE_MS = 150
ID_ROLE = Qt.ItemDataRole.UserRole


NO_CHATS = "No chats yet. Each conversation is kept here, and Ctrl+K searches them all."
NO_MATCHES = "No chats match."


class ChatSidebar(QWidget):
    refreshed = Signal()
    """The list was (re)filled: all conversations, or the results of a search."""

    def __init__(
        self,
        db: AsyncChatStore,
        chat: ChatController,
        tasks: TaskSet,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.db = db
        self.chat = chat
        self._tasks = tasks
        self.search_box = QLineEdit(self)
        self.search_box.setObjectName("chatSearch")
        self.search_box.setAccessibleName("Search chats")
        self.search_box.setPlaceholderText("Search chats (Ctrl+K)")
        self.search_box.setClearButtonEnabled(True)
        self.list = QListWidget(self)
        self.list.setObjectName("chatList")
        self.list.setAccessibleName("Conversations")
        # Rows are painted by ChatRowDelegate (title, then when or what matched); the
        # list itself is flat on the panel, as in chat apps, not a framed table.
        self.list.setItemDelegate(ChatRowDelegate(self.list))
        self.list.setStyleSheet(
            "QListWidget#chatList { border: none; background: transparent; padding: 0px; }"
        )
        self.list.setMouseTracking(True)
        self.list.viewport().setAttribute(Qt.WidgetAttribute.WA_Hover)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setVerticalScrollMode(QListWidget.ScrollMode.ScrollPerPixel)
        self.list.setUniformItemSizes(True)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._row_menu)
        self.empty_label = QLabel(NO_CHATS, self)  # an empty list says why it is empty
        self.empty_label.setObjectName("chatListEmpty")
        self.empty_label.setProperty("role", "muted")
        self.empty_label.setWordWrap(True)
        self.empty_label.setContentsMargins(SPACE["s"], SPACE["s"], SPACE["s"], SPACE["s"])
        self.new_button = QPushButton("New chat", self)
        self.new_button.setObjectName("newChatButton")
        self.new_button.setToolTip("Start a new chat (Ctrl+N)")
        self.new_button.setAccessibleName("New chat")
        self.new_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.rename_button = self._button("Rename", "renameChatButton", "Rename this chat")
        self.delete_button = self._button("Delete", "deleteChatButton", "Delete this chat")
        self.export_button = self._button("Export", "exportChatButton", "Save this chat as a file")
        self.export_button.setAccessibleName("Export chat")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.export_button)
        menu.addAction("As Markdown…", lambda: self._choose_export("md"))
        menu.addAction("As JSON…", lambda: self._choose_export("json"))
        self.export_button.setMenu(menu)
        self._search_icon = self.search_box.addAction(
            QIcon(), QLineEdit.ActionPosition.LeadingPosition
        )

        row = QHBoxLayout()  # what can be done with the open chat, quietly under the list
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(SPACE["xs"])
        for w in (self.rename_button, self.delete_button, self.export_button):
            keep = w.sizePolicy()
            keep.setRetainSizeWhenHidden(True)  # the list keeps its height: no jump
            w.setSizePolicy(keep)
            row.addWidget(w)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        # Clear of the rail and the splitter; the New chat button lines up with the list.
        layout.setContentsMargins(SPACE["s"], SPACE["s"], SPACE["s"], SPACE["xs"])
        layout.setSpacing(SPACE["s"])
        layout.addWidget(self.new_button)
        layout.addWidget(self.search_box)
        layout.addWidget(self.empty_label)
        layout.addWidget(self.list, 1)
        layout.addLayout(row)
        self._refresh_icons()

        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(SEARCH_DEBOUNCE_MS)
        self._search_timer.timeout.connect(self.refresh)
        self.search_box.textChanged.connect(lambda _t: self._search_timer.start())
        self.list.itemActivated.connect(self._open_item)
        self.list.itemClicked.connect(self._open_item)
        self.new_button.clicked.connect(chat.new_chat)
        self.rename_button.clicked.connect(self._ask_rename)
        self.delete_button.clicked.connect(self._ask_delete)
        chat.history_changed.connect(self.refresh)
        chat.conversation_changed.connect(self._sync_selection)
        self.hits: list[SearchHit] = []
        self.conversations: list[Conversation] = []
        self._sync_selection()

    def _button(self, text: str, name: str, tip: str) -> QToolButton:
        button = QToolButton(self)
        button.setText(text)
        button.setObjectName(name)
        button.setToolTip(tip)
        button.setAccessibleName(f"{text} chat")
        button.setAutoRaise(True)
        button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        button.setCursor(Qt.CursorShape.PointingHandCursor)
        return button

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:
            self._refresh_icons()
        super().changeEvent(event)

    def _refresh_icons(self) -> None:
        """Icons are tinted for the theme (``style.icons``): remade when it changes."""
        t = tokens_for(self.palette())
        self.new_button.setIcon(icon("new_chat", t))
        self.rename_button.setIcon(icon("edit", t, color=t.text_muted))
        self.delete_button.setIcon(icon("delete", t, color=t.text_muted))
        self.export_button.setIcon(icon("export", t, color=t.text_muted))
        self._search_icon.setIcon(icon("search", t, color=t.text_muted))

    def _row_menu(self, pos: QPoint) -> None:
        """Right-click on a row: what the buttons under the list do, for that row."""
        item = self.list.itemAt(pos)
        if item is None:
            return
        target = (int(item.data(ID_ROLE)), item.text().partition("\n")[0])
        menu = QMenu(self)
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)  # one per right-click
        menu.addAction("Rename…", lambda: self._ask_rename(target))
        export = menu.addMenu("Export")
        export.addAction("As Markdown…", lambda: self._choose_export("md", target))
        export.addAction("As JSON…", lambda: self._choose_export("json", target))
        menu.addSeparator()
        menu.addAction("Delete…", lambda: self._ask_delete(target))
        menu.popup(self.list.viewport().mapToGlobal(pos))

    # ------------------------------------------------------------------ list
    def refresh(self) -> asyncio.Task[None]:
        return self._tasks.spawn(self._refresh(), name="chat-list")

    async def _refresh(self) -> None:
        query = self.search_box.text().strip()
        if query:
            self.hits = await self.db.run(lambda s: s.search(query))
            self.conversations = []
            self._fill([(h.conversation_id, f"{h.title}\n{h.snippet}") for h in self.hits])
        else:
            self.hits = []
            self.conversations = await self.db.run(lambda s: s.list_conversations())
            self._fill([(c.id, f"{c.title}\n{when(c.updated)}") for c in self.conversations])
        self.refreshed.emit()

    def _fill(self, rows: list[tuple[int, str]]) -> None:
        self.list.blockSignals(True)
        self.list.clear()
        for cid, text in rows:
            item = QListWidgetItem(text)
            item.setData(ID_ROLE, cid)
            item.setToolTip(text)
            self.list.addItem(item)
        self.list.blockSignals(False)
        self.empty_label.setText(NO_MATCHES if self.search_box.text().strip() else NO_CHATS)
        self.empty_label.setVisible(not rows)
        self._sync_selection()

    def shown_ids(self) -> list[int]:
        return [int(self.list.item(i).data(ID_ROLE)) for i in range(self.list.count())]

    def _sync_selection(self) -> None:
        current = self.chat.conversation_id
        has = current is not None
        for button in (self.rename_button, self.delete_button, self.export_button):
            button.setEnabled(has)
            button.setVisible(has)  # no greyed clutter under an empty list
        self.list.blockSignals(True)
        self.list.clearSelection()
        for i in range(self.list.count()):
            item = self.list.item(i)
            if item.data(ID_ROLE) == current:
                self.list.setCurrentItem(item)
        self.list.blockSignals(False)

    def _open_item(self, item: QListWidgetItem) -> None:
        cid = int(item.data(ID_ROLE))
        if cid != self.chat.conversation_id:
            self._tasks.spawn(self.chat.open_conversation(cid), name="open-chat")

    def focus_search(self) -> None:
        self.search_box.setFocus()
        self.search_box.selectAll()

    # ------------------------------------------------------------------ actions
    async def rename(self, conversation_id: int, title: str) -> None:
        await self.db.run(lambda s: s.rename(conversation_id, title))
        if conversation_id == self.chat.conversation_id:
            self.chat.title = title
        await self._refresh()

    async def delete(self, conversation_id: int) -> None:
        if conversation_id == self.chat.conversation_id:
            self.chat.new_chat()
        await self.db.run(lambda s: s.delete_conversation(conversation_id))
        await self._refresh()

    async def export(self, conversation_id: int, path: Path | str, fmt: str) -> Path:
        """Write the conversation to ``path`` as "md" (Markdown) or "json"."""
        if fmt not in ("md", "json"):
            raise ValueError(f"unknown export format {fmt!r}")
        target = Path(path)

        def write(store: ChatStore) -> None:
            if fmt == "md":  # images go in a folder beside the file, linked by name
                folder = target.with_name(f"{target.stem}-images")
                text = store.export_markdown(conversation_id, folder.name)
                store.export_image_files(conversation_id, folder)
            else:
                text = store.export_json(conversation_id)
            target.write_text(text, encoding="utf-8")

        await self.db.run(write)
        log.info("exported conversation %d to %s", conversation_id, target)
        return target

    def _target(self, target: tuple[int, str] | None) -> tuple[int, str] | None:
        """(id, title) of a right-clicked row, else of the open chat (None: none)."""
        if target is not None:
            return target
        cid = self.chat.conversation_id
        return None if cid is None else (cid, self.chat.title)

    def _ask_rename(self, target: tuple[int, str] | None = None) -> None:
        chosen = self._target(target)
        if chosen is None:
            return
        cid, old = chosen
        title, ok = QInputDialog.getText(self, "Rename chat", "Title:", text=old)
        if ok and title.strip():
            self._tasks.spawn(self.rename(cid, title), name="rename-chat")

    def _ask_delete(self, target: tuple[int, str] | None = None) -> None:
        chosen = self._target(target)
        if chosen is None:
            return
        cid, title = chosen
        answer = QMessageBox.question(
            self, "Delete chat", f"Delete “{title}” and all its messages?"
        )
        if answer == QMessageBox.StandardButton.Yes:
            self._tasks.spawn(self.delete(cid), name="delete-chat")

    def _choose_export(self, fmt: str, target: tuple[int, str] | None = None) -> None:
        chosen = self._target(target)
        if chosen is None:
            return
        cid, title = chosen
        name = "".join(c if c.isalnum() or c in " -_" else "_" for c in title).strip()
        filters = "Markdown (*.md)" if fmt == "md" else "JSON (*.json)"
        path, _ = QFileDialog.getSaveFileName(
            self, "Export chat", f"{name or 'chat'}.{fmt}", filters
        )
        if path:
            self._tasks.spawn(self.export(cid, path, fmt), name="export-chat")
