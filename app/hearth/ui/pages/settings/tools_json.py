"""``mcp.json`` as text, for those who would rather paste a server's snippet from its
README than fill in a form.

Saving validates first (``McpFile.save_text``: JSON, then the ``mcpServers`` rules);
a mistake is shown under the editor, the cursor goes to its line when it has one, and
nothing is written. Secrets typed here are moved into the secret store on save like
any other (the text then shows ``hearth-secret:...`` references), and the file is read
and written on worker threads.
"""

from __future__ import annotations

import re

from PySide6.QtCore import Signal
from PySide6.QtGui import QFontDatabase, QTextCursor
from PySide6.QtWidgets import (
    QDialog,
    QLabel,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from hearth.config.secrets import SecretStoreError
from hearth.tools.mcp_config import McpConfigError
from hearth.tools.mcp_file import McpFile
from hearth.ui.pages.settings.dialog_parts import error_line, save_cancel
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread

_LINE = re.compile(r"\(line (\d+), column (\d+)\)")


class JsonDialog(QDialog):
    """The editor; ``saved`` fires once the file holds the text."""

    saved = Signal()

    def __init__(self, mcp_file: McpFile, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.mcp_file = mcp_file
        self._tasks = TaskSet()
        self.setWindowTitle("mcp.json")
        self.setAccessibleName("Edit mcp.json")
        self.resize(640, 480)
        hint = QLabel(
            f"{mcp_file.path}: the mcpServers format of Claude Desktop, Cursor and LM "
            "Studio. Keys typed here go to the secret store when you save.",
            self,
        )
        hint.setProperty("role", "muted")
        hint.setWordWrap(True)
        self.editor = QPlainTextEdit(self)
        self.editor.setAccessibleName("mcp.json")
        self.editor.setObjectName("mcpJsonEditor")
        self.editor.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.editor.setPlainText(text)
        self.error_label = error_line(self, "mcpJsonError")
        self.buttons = save_cancel(self, self.save)
        layout = QVBoxLayout(self)
        layout.addWidget(hint)
        layout.addWidget(self.editor, 1)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)

    def save(self) -> None:
        self._tasks.spawn(self.save_now(), name="mcp-json-save")

    async def save_now(self) -> bool:
        try:
            await in_thread(self.mcp_file.save_text, self.editor.toPlainText())
        except (McpConfigError, ValueError, SecretStoreError) as exc:
            message = getattr(exc, "message", None) or str(exc)
            self.error_label.setText(f"Not saved: {message}")
            self.error_label.setVisible(True)
            self._go_to(message)
            return False
        self.error_label.setVisible(False)
        self.saved.emit()
        self.accept()
        return True

    def _go_to(self, message: str) -> None:
        """Put the cursor where the JSON mistake is, when the message says."""
        found = _LINE.search(message)
        if found is None:
            return
        line, column = int(found.group(1)), int(found.group(2))
        block = self.editor.document().findBlockByLineNumber(line - 1)
        cursor = QTextCursor(block)
        cursor.movePosition(
            QTextCursor.MoveOperation.Right, QTextCursor.MoveMode.MoveAnchor, max(0, column - 1)
        )
        self.editor.setTextCursor(cursor)
        self.editor.setFocus()
