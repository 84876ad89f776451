"""The Server panel's "API keys" box: create, list, copy and revoke the endpoint's keys.

The keys live in the secret store the settings name (``hearth.config.api_keys``: the
system keyring, or a file when chosen), read and written on a worker thread because
keyring backends can block. This box owns the widgets and those calls only; passing a
change on to the running endpoint (and the LAN rule that needs a key) stays in
``ServerPanel``, which drives ``add_key`` and ``revoke`` from its own tasks so that
awaiting them covers that too. With no key yet, the table says what keys are for
instead of showing an empty grid.

Where the keyring cannot hold keys (no system keyring, or one that is locked), the
card says so in its own words and offers the file store with its risk in one line,
instead of the command line's advice; the switch is the ``secret_store`` setting, as
Settings' "Keep it in a file instead" for the Hugging Face token.
"""

from __future__ import annotations

import datetime as dt
from enum import Enum

from PySide6.QtCore import Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from hearth.config.api_keys import ApiKey, create_key, load_keys, revoke_key
from hearth.config.paths import default_paths
from hearth.config.secrets import (
    KeyringUnavailableError,
    SecretStore,
    SecretStoreError,
    StoreChoice,
    store_for_setting,
)
from hearth.ui.app_settings import SettingsStore
from hearth.ui.style.tokens import SPACE
from hearth.ui.threads import in_thread
from hearth.ui.widgets.empty_overlay import EmptyOverlay
from hearth.ui.widgets.section import Message, Section

KEYS_TABLE_MIN_PX = 110  # the header and three keys
NO_KEYS = (
    "No keys yet. Apps on this computer need none unless you require one; the LAN always does."
)


class KeyringTrouble(str, Enum):
    """Why the keyring cannot keep the keys; the notice's first line says it."""

    NONE = ""
    MISSING = "This computer has no system keyring, so Hearth cannot keep API keys in one."
    UNREADABLE = (
        "The system keyring cannot be read now (it may be locked), so the API keys in it "
        "cannot be shown or changed. Unlock it and reopen this page, or use a file."
    )


FILE_RISK = "In a file, keys are saved unencrypted, readable only by your account."


class KeyringNotice(QWidget):
    """Inside the keys card: what is wrong with the keyring, the file store's risk, and
    the button that switches to it (each on its own line, so narrow cards wrap them)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("keyringNotice")
        where = str(default_paths().secrets_file)
        self.problem = Message(self)
        self.problem.setObjectName("keyringProblem")
        self.risk = QLabel(FILE_RISK, self)
        self.risk.setObjectName("fileStoreRisk")
        self.risk.setProperty("role", "muted")
        self.risk.setWordWrap(True)
        self.risk.setToolTip(where)
        self.use_file_button = QPushButton("Keep keys in a file", self)
        self.use_file_button.setAccessibleName("Keep API keys in a file instead of the keyring")
        self.use_file_button.setToolTip(where)
        self.use_file_button.setProperty("primary", True)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(SPACE["xs"])
        column.addWidget(self.problem)
        column.addWidget(self.risk)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.use_file_button)
        column.addLayout(row)
        self.setVisible(False)

    def show_trouble(self, trouble: KeyringTrouble) -> None:
        self.problem.setText(trouble.value)
        self.setVisible(trouble is not KeyringTrouble.NONE)


class ApiKeysBox(Section):
    """The key list and its buttons; ``keys`` mirrors the keyring after each change."""

    keys_changed = Signal()  # after the table was refilled from the keyring

    def __init__(self, settings: SettingsStore, parent: QWidget | None = None) -> None:
        super().__init__(
            "API keys",
            "Apps send a key as a Bearer token. Needed on the LAN, or when “Require an "
            "API key” is on; a new key is shown once.",
            parent,
            icon_kind="key",
        )
        self.setObjectName("apiKeysSection")
        self.settings_store = settings
        self.keys: list[ApiKey] = []
        self.trouble = KeyringTrouble.NONE
        self._build()

    def _build(self) -> None:
        self.keyring_notice = KeyringNotice(self)
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
        self.body.addWidget(self.keyring_notice)
        self.body.addLayout(create_row)
        self.body.addLayout(new_row)
        # The table's place: an Ignored policy leaves a widget out of its card's height
        # for a width (which the stacked page lays out by), so the card would be given
        # less than its minimum; this holder counts the table's minimum there.
        table_place = QWidget(self)
        table_place.setObjectName("keysTablePlace")
        place = QVBoxLayout(table_place)
        place.setContentsMargins(0, 0, 0, 0)
        place.addWidget(self.keys_table)
        self.body.addWidget(table_place, 1)
        self.body.addLayout(key_buttons)
        self.body.addWidget(self.keys_message)

    # ------------------------------------------------------------------ store
    def secret_store(self) -> SecretStore:
        """The store the settings name (``HEARTH_SECRET_STORE`` wins, as for the CLI)."""
        return store_for_setting(self.settings_store.settings.secret_store)

    async def reload(self) -> None:
        """Read the keys from the store (an error is shown, the list is then empty)."""
        store = self.secret_store()
        keyring = store.name == StoreChoice.KEYRING.value
        trouble = KeyringTrouble.NONE
        try:
            if keyring and not await in_thread(store.usable):
                trouble = KeyringTrouble.MISSING
            self.keys = await in_thread(load_keys, store)
        except KeyringUnavailableError:
            self.keys = []
            trouble = trouble if trouble is not KeyringTrouble.NONE else KeyringTrouble.UNREADABLE
        except SecretStoreError as exc:
            self.keys = []
            self.keys_message.setText(exc.message)  # the file: its own words, its path
        self._show_trouble(trouble)
        self._show_keys()

    def _keyring_failed(self, what: str) -> None:
        """A write the keyring refused: the notice says why and what to do."""
        missing = self.trouble is KeyringTrouble.MISSING
        self._show_trouble(KeyringTrouble.MISSING if missing else KeyringTrouble.UNREADABLE)
        self.keys_message.setText(what)

    def _show_trouble(self, trouble: KeyringTrouble) -> None:
        self.trouble = trouble
        self.keyring_notice.show_trouble(trouble)
        for widget in (self.key_name, self.create_button):
            widget.setEnabled(trouble is KeyringTrouble.NONE)

    async def use_file_store(self) -> None:
        """Keep secrets in the file from now on (the ``secret_store`` setting), then
        read the keys from there."""
        self.settings_store.settings.secret_store = StoreChoice.FILE.value
        saving = self.settings_store.save()
        if saving is not None:
            await saving  # the worker reads the setting from the file
        await self.reload()
        if self.trouble is KeyringTrouble.NONE:
            where = default_paths().secrets_file
            self.keys_message.setText(f"API keys are now kept in {where}.")

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
            key = await in_thread(create_key, name, self.secret_store())
        except KeyringUnavailableError:
            self._keyring_failed(f"Key '{name}' was not created.")
            return False
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
            await in_thread(revoke_key, key.name, self.secret_store())
        except KeyringUnavailableError:
            self._keyring_failed(f"Key '{key.name}' was not revoked.")
            return False
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
