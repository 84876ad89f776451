"""Add or edit one MCP server: a command to run (stdio) or a URL (streamable HTTP), with
its environment variables or headers.

A variable can be marked secret (headers always are; a name such as ``..._TOKEN`` is
ticked for the user): on save it goes to the secret store and ``mcp.json`` holds a
reference (``tools/mcp_secrets.py``). A stored secret is never shown back: its value
cell says it is stored, and it is kept unless something is typed over it. Saving writes
through ``McpFile`` on a worker thread (the keyring can block); a mistake is named in
the dialog and nothing is written.
"""

from __future__ import annotations

import logging
import shlex
from functools import partial
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from hearth.config.secrets import SecretStoreError
from hearth.tools.mcp_config import McpConfigError
from hearth.tools.mcp_file import McpFile
from hearth.tools.mcp_secrets import is_reference, looks_secret
from hearth.ui.pages.settings.dialog_parts import error_line, save_cancel
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread

log = logging.getLogger(__name__)

STDIO, HTTP = "stdio", "http"
STORED = "•••••• (stored)"
"""A stored secret's value cell: says it is there, never what it is."""
_REF_ROLE = Qt.ItemDataRole.UserRole


class ServerDialog(QDialog):
    """The form; ``saved`` carries the server's name once ``mcp.json`` holds it."""

    saved = Signal(str)

    def __init__(
        self,
        mcp_file: McpFile,
        parent: QWidget | None = None,
        *,
        name: str | None = None,
        raw: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(parent)
        self.mcp_file = mcp_file
        self.editing = name
        self.original: dict[str, Any] = dict(raw or {})
        self._tasks = TaskSet()
        self.setWindowTitle(f"Edit MCP server '{name}'" if name else "Add an MCP server")
        self.setAccessibleName(self.windowTitle())
        self.setMinimumWidth(560)
        self.name_field = QLineEdit(name or "", self)
        self.name_field.setAccessibleName("Server name")
        self.name_field.setPlaceholderText("time")
        self.kind_combo = QComboBox(self)
        self.kind_combo.setAccessibleName("Kind")
        self.kind_combo.addItem("A command to run (stdio)", STDIO)
        self.kind_combo.addItem("A URL (streamable HTTP)", HTTP)
        self.command_field = QLineEdit(str(self.original.get("command", "")), self)
        self.command_field.setAccessibleName("Command")
        self.command_field.setPlaceholderText("uvx")
        args = self.original.get("args", [])
        self.args_field = QLineEdit(shlex.join(args) if isinstance(args, list) else "", self)
        self.args_field.setAccessibleName("Arguments")
        self.args_field.setPlaceholderText("mcp-server-time --local-timezone UTC")
        self.url_field = QLineEdit(str(self.original.get("url", "")), self)
        self.url_field.setAccessibleName("URL")
        self.url_field.setPlaceholderText("http://127.0.0.1:8000/mcp")
        self.vars_label = QLabel(self)
        self.vars_table = QTableWidget(0, 3, self)
        self.vars_table.setAccessibleName("Variables")
        self.vars_table.setHorizontalHeaderLabels(["Name", "Value", "Secret"])
        self.vars_table.verticalHeader().setVisible(False)
        self.vars_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        header = self.vars_table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.vars_table.setMaximumHeight(160)
        self.vars_table.itemChanged.connect(self._name_changed)
        self.add_var_button = QPushButton("Add variable", self)
        self.add_var_button.clicked.connect(lambda: self.add_variable("", ""))
        self.remove_var_button = QPushButton("Remove variable", self)
        self.remove_var_button.clicked.connect(self._remove_variable)
        self.error_label = error_line(self, "toolsDialogError")
        self.buttons = save_cancel(self, self.save)

        form = QFormLayout()
        form.addRow("Name", self.name_field)
        form.addRow("Kind", self.kind_combo)
        self.command_row = (QLabel("Command", self), self.command_field)
        self.args_row = (QLabel("Arguments", self), self.args_field)
        self.url_row = (QLabel("URL", self), self.url_field)
        for label, field in (self.command_row, self.args_row, self.url_row):
            form.addRow(label, field)
        var_buttons = QHBoxLayout()
        var_buttons.addWidget(self.add_var_button)
        var_buttons.addWidget(self.remove_var_button)
        var_buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.vars_label)
        layout.addWidget(self.vars_table)
        layout.addLayout(var_buttons)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)

        http = "url" in self.original
        self.kind_combo.setCurrentIndex(1 if http else 0)
        values = self.original.get("headers" if http else "env", {})
        for key, value in (values if isinstance(values, dict) else {}).items():
            self.add_variable(str(key), str(value))
        self.kind_combo.currentIndexChanged.connect(self._kind_changed)
        self._kind_changed()

    # ------------------------------------------------------------------ the form
    def kind(self) -> str:
        return str(self.kind_combo.currentData())

    def add_variable(self, name: str, value: str, secret: bool | None = None) -> int:
        """A row; a stored secret's value shows as :data:`STORED`."""
        row = self.vars_table.rowCount()
        self.vars_table.insertRow(row)
        self.vars_table.setItem(row, 0, QTableWidgetItem(name))
        shown = QTableWidgetItem(STORED if is_reference(value) else value)
        if is_reference(value):
            shown.setData(_REF_ROLE, value)
            shown.setToolTip("Kept in the secret store; type a new value to replace it.")
        self.vars_table.setItem(row, 1, shown)
        mark = QTableWidgetItem()
        ticked = secret if secret is not None else is_reference(value)
        mark.setCheckState(Qt.CheckState.Checked if ticked else Qt.CheckState.Unchecked)
        self.vars_table.setItem(row, 2, mark)
        self._mark_follows_name(row)
        return row

    def _name_changed(self, item: QTableWidgetItem) -> None:
        if item.column() == 0:
            self._mark_follows_name(item.row())

    def _mark_follows_name(self, row: int) -> None:
        """A name such as ``..._TOKEN`` is sealed whatever the box says, so its box is
        ticked and can't be unticked; other names are the user's to mark."""
        mark = self.vars_table.item(row, 2)
        if mark is None:
            return
        always = looks_secret(_text(self.vars_table.item(row, 0)))
        flags = Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled
        mark.setFlags(flags & ~Qt.ItemFlag.ItemIsEnabled if always else flags)
        mark.setToolTip("A name like this is always kept in the secret store." if always else "")
        if always:
            mark.setCheckState(Qt.CheckState.Checked)

    def _remove_variable(self) -> None:
        row = self.vars_table.currentRow()
        if row >= 0:
            self.vars_table.removeRow(row)

    def _kind_changed(self) -> None:
        http = self.kind() == HTTP
        for label, field in (self.command_row, self.args_row):
            label.setVisible(not http)
            field.setVisible(not http)
        self.url_row[0].setVisible(http)
        self.url_row[1].setVisible(http)
        self.vars_label.setText(
            "Headers (every header is kept in the secret store)" if http
            else "Environment (the server gets only these, plus PATH and HOME)"
        )  # fmt: skip
        self.vars_table.setColumnHidden(2, http)

    def variables(self) -> tuple[dict[str, str], set[str]]:
        """The table's rows, and the names marked secret. A stored secret left as
        :data:`STORED` stays the reference it was."""
        values: dict[str, str] = {}
        marked: set[str] = set()
        for row in range(self.vars_table.rowCount()):
            name = _text(self.vars_table.item(row, 0)).strip()
            cell = self.vars_table.item(row, 1)
            value = _text(cell)
            if not name:
                continue
            ref = cell.data(_REF_ROLE) if cell is not None else None
            values[name] = str(ref) if ref and value == STORED else value
            mark = self.vars_table.item(row, 2)
            if mark is not None and mark.checkState() == Qt.CheckState.Checked:
                marked.add(name)
        return values, marked

    def entry(self) -> tuple[dict[str, Any], set[str]]:
        """The server as ``mcp.json`` holds it (keys the form doesn't show are kept)."""
        raw = dict(self.original)
        values, marked = self.variables()
        for key in ("command", "args", "env", "cwd", "url", "headers"):
            raw.pop(key, None)
        if self.kind() == HTTP:
            if raw.get("type") not in (None, "http", "streamable-http", "streamableHttp"):
                raw.pop("type")
            raw["url"] = self.url_field.text().strip()
            if values:
                raw["headers"] = values
            return raw, set()
        if raw.get("type") not in (None, "stdio"):
            raw.pop("type")
        raw["command"] = self.command_field.text().strip()
        try:
            raw["args"] = shlex.split(self.args_field.text())
        except ValueError as exc:
            raise McpConfigError(f"The arguments can't be split into words: {exc}.") from None
        if "cwd" in self.original:
            raw["cwd"] = self.original["cwd"]
        if values:
            raw["env"] = values
        return raw, marked

    # ------------------------------------------------------------------ saving
    def save(self) -> None:
        self._tasks.spawn(self.save_now(), name="mcp-server-save")

    async def save_now(self) -> bool:
        """Validate and write; on a mistake the dialog stays open and says what."""
        name = self.name_field.text().strip()
        if not name:
            return self._fail("Give the server a name.")
        try:
            raw, marked = self.entry()
            put = partial(self.mcp_file.put, replacing=self.editing, marked=marked)
            await in_thread(put, name, raw)
        except (McpConfigError, ValueError, SecretStoreError) as exc:
            return self._fail(getattr(exc, "message", None) or str(exc))
        self.error_label.setVisible(False)
        self.saved.emit(name)
        self.accept()
        return True

    def _fail(self, message: str) -> bool:
        self.error_label.setText(message)
        self.error_label.setVisible(True)
        return False


def _text(item: QTableWidgetItem | None) -> str:
    return item.text() if item is not None else ""
