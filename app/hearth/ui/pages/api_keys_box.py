"""The Server panel's "API keys" box: create, list, copy and revoke keyring keys.

The keys live in the system keyring (``hearth.config.api_keys``), read and written on a
worker thread because keyring backends can block. This box owns the widgets and the
keyring calls only; passing a change on to the running endpoint (and the LAN rule that
needs a key) stays in ``ServerPanel``, which drives ``add_key`` and ``revoke`` from its
own tasks so that awaiting them covers that too. With no key yet, the table says what
keys are for instead of showing an empty grid.
"""

from __future__ import annotations

import datetime as dt

from PySide6.QtCore import Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from hearth.config.api_keys import ApiKey, create_key, load_keys, revoke_key
from hearth.config.secrets import SecretStoreError
from hearth.ui.pages.empty_overlay import EmptyOverlay
from hearth.ui.section import Message, Section
from hearth.ui.style.tokens import SPACE
from hearth.ui.threads import in_thread

KEYS_TABLE_MIN_PX = 110  # the header and three keys
NO_KEYS = (
    "No keys yet. Apps on this computer need none unless you require one; the LAN always does."
)


class ApiKeysBox(Section):
    """The key list and its buttons; ``keys`` mirrors the keyring after each change."""

    keys_changed = Signal()  # after the table was refilled from the keyring

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(
            "API keys",
            "Apps send a key as a Bearer token. Needed on the LAN, or when “Require an "
            "API key” is on; a new key is shown once.",
            parent,
            icon_kind="key",
        )
        self.setObjectName("apiKeysSection")
        self.keys: list[ApiKey] = []
        self._build()

    def _build(self) -> None:
        self.key_name = QLineEdit(self)
        self.key_name.setPlaceholderText("Key name, e.g. laptop")
        self.key_name.setAccessibleName("New key name")
        self.create_button = QPushButton("Create", self)
        self.create_button.setAccessibleName("Create API key")
        self.new_key_field = QLineEdit(self)
        self.new_key_field.setReadOnly(True)
        self.new_key_field.setAccessibleName("New API key (shown once)")
        self.new_key_field.setPlaceholderText("A new key is shown here once")
        self.copy_new_button = QPushButton("Copy", self)
        self.copy_new_button.setAccessibleName("Copy the new API key")
        self.copy_new_button.setEnabled(False)
        self.copy_new_button.clicked.connect(
            lambda: self.copy(self.new_key_field.text(), "The new key was copied.")
        )
        self.keys_table = QTableWidget(0, 3, self)
        self.keys_table.setAccessibleName("API keys")
        self.keys_table.setHorizontalHeaderLabels(["Name", "Key", "Created"])
        self.keys_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.keys_table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.keys_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.keys_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.keys_table.setMinimumHeight(KEYS_TABLE_MIN_PX)  # grows with its card
        policy = self.keys_table.sizePolicy()  # the card's height decides, not the table
        policy.setVerticalPolicy(QSizePolicy.Policy.Ignored)
        self.keys_table.setSizePolicy(policy)
        self.keys_table.verticalHeader().setVisible(False)
        self.keys_table.setShowGrid(False)
        self.keys_table.setAlternatingRowColors(True)
        self.no_keys = EmptyOverlay(self.keys_table, NO_KEYS, "keysEmpty")
        self.copy_key_button = QPushButton("Copy", self)
        self.copy_key_button.setAccessibleName("Copy the selected API key")
        self.copy_key_button.clicked.connect(self.copy_selected_key)
        self.revoke_button = QPushButton("Revoke", self)
        self.revoke_button.setAccessibleName("Revoke the selected API key")
        self.keys_message = Message(self)
        create_row = QHBoxLayout()
        create_row.addWidget(self.key_name, 1)
        create_row.addWidget(self.create_button)
        new_row = QHBoxLayout()
        new_row.addWidget(self.new_key_field, 1)
        new_row.addWidget(self.copy_new_button)
        key_buttons = QHBoxLayout()
        key_buttons.addStretch(1)
        key_buttons.addWidget(self.copy_key_button)
        key_buttons.addWidget(self.revoke_button)
        for line in (create_row, new_row, key_buttons):
            line.setSpacing(SPACE["s"])
        self.body.addLayout(create_row)
        self.body.addLayout(new_row)
        self.body.addWidget(self.keys_table, 1)
        self.body.addLayout(key_buttons)
        self.body.addWidget(self.keys_message)

    # ------------------------------------------------------------------ keyring
    async def reload(self) -> None:
        """Read the keys from the keyring (an error is shown, the list is then empty)."""
        try:
            self.keys = await in_thread(load_keys)
        except SecretStoreError as exc:
            self.keys = []
            self.keys_message.setText(exc.message)
        self._show_keys()

    def _show_keys(self) -> None:
        self.keys_table.setRowCount(len(self.keys))
        for row, key in enumerate(self.keys):
            created = dt.datetime.fromtimestamp(key.created).strftime("%Y-%m-%d %H:%M")
            for col, text in enumerate((key.name, key.masked, created)):
                self.keys_table.setItem(row, col, QTableWidgetItem(text))
        self.no_keys.setVisible(not self.keys)
        self.copy_key_button.setEnabled(bool(self.keys))
        self.revoke_button.setEnabled(bool(self.keys))
        if self.keys and not self.keys_table.selectedItems():
            self.keys_table.selectRow(len(self.keys) - 1)
        self.keys_changed.emit()

    def new_key_name(self) -> str:
        """The typed name, or a numbered default so an empty field still creates a key."""
        return self.key_name.text().strip() or f"key {len(self.keys) + 1}"

    async def add_key(self, name: str) -> bool:
        """Create key ``name`` and show it once; False when the keyring refused."""
        try:
            key = await in_thread(create_key, name)
        except SecretStoreError as exc:
            self.keys_message.setText(exc.message)
            return False
        self.key_name.clear()
        self.new_key_field.setText(key.key)
        self.new_key_field.setCursorPosition(0)  # show its "hk-" start, not its end
        self.copy_new_button.setEnabled(True)
        self.keys_message.setText(f"Key '{name}' created. Copy it now: it is not shown again.")
        await self.reload()
        self.keys_table.selectRow(len(self.keys) - 1)
        return True

    def key_to_revoke(self) -> ApiKey | None:
        """The selected key, or None with a hint: revoking never guesses a key."""
        rows = self.keys_table.selectionModel().selectedRows()
        if not rows or rows[0].row() >= len(self.keys):
            self.keys_message.setText("Select a key to revoke.")
            return None
        return self.keys[rows[0].row()]

    async def revoke(self, key: ApiKey) -> bool:
        """Remove ``key`` from the keyring; False when the keyring refused."""
        try:
            await in_thread(revoke_key, key.name)
        except SecretStoreError as exc:
            self.keys_message.setText(exc.message)
            return False
        if self.new_key_field.text() == key.key:
            self.new_key_field.clear()
            self.copy_new_button.setEnabled(False)
        self.keys_message.setText(f"Key '{key.name}' was revoked.")
        await self.reload()
        return True

    # ------------------------------------------------------------------ copy
    def selected_key(self) -> ApiKey | None:
        """The selected key, else the newest: what the Copy buttons put in snippets."""
        rows = self.keys_table.selectionModel().selectedRows()
        if rows and rows[0].row() < len(self.keys):
            return self.keys[rows[0].row()]
        return self.keys[-1] if self.keys else None

    def copy_selected_key(self) -> None:
        key = self.selected_key()
        if key is not None:
            self.copy(key.key, f"Key '{key.name}' was copied.")

    def copy(self, text: str, message: str) -> None:
        """Put ``text`` on the clipboard and say so under the keys."""
        QGuiApplication.clipboard().setText(text)
        self.keys_message.setText(message)
