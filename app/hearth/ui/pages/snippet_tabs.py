"""The Server panel's ready-to-paste client configurations, one tab per client.

The texts are ``hearth config``'s (``core.client_config.SNIPPETS``), shown with a key
placeholder; each tab's Copy button asks the panel for the text with a real key in
(``copy_requested``), since the keys are the panel's.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QHBoxLayout,
    QPlainTextEdit,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from hearth.core.client_config import SNIPPETS, Endpoint

log = logging.getLogger(__name__)

SNIPPET_TITLES = {
    "claude-code": "Claude Code",
    "codex": "Codex CLI",
    "copilot": "Copilot",
    "llama-vscode": "llama.vscode",
    "continue": "Continue",
    "openai": "OpenAI SDK (Python)",
    "curl": "curl",
}


class SnippetTabs(QTabWidget):
    """A read-only view and a Copy button per client."""

    copy_requested = Signal(str)  # the snippet's kind (a key of SNIPPETS)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Client configuration")
        self.views: dict[str, QPlainTextEdit] = {}
        self.copy_buttons: dict[str, QPushButton] = {}
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        for kind, title in SNIPPET_TITLES.items():
            page = QWidget(self)
            view = QPlainTextEdit(page)
            view.setReadOnly(True)
            view.setFont(mono)  # shell lines and JSON, as in a terminal or an editor
            view.setAccessibleName(f"{title} configuration")
            copy = QPushButton(f"Copy {title} config", page)
            copy.setAccessibleName(f"Copy {title} configuration")
            copy.setProperty("primary", True)
            copy.clicked.connect(lambda _c=False, k=kind: self.copy_requested.emit(k))
            row = QHBoxLayout()
            row.addStretch(1)
            row.addWidget(copy)
            col = QVBoxLayout(page)
            col.addWidget(view)
            col.addLayout(row)
            self.addTab(page, title)
            self.views[kind] = view
            self.copy_buttons[kind] = copy

    def show_endpoint(self, endpoint: Endpoint, *, enabled: bool) -> None:
        """Every snippet for ``endpoint``; while it is off, each says to turn it on."""
        note = "" if enabled else "# Turn the endpoint on first.\n"
        for kind, view in self.views.items():
            view.setPlainText(note + SNIPPETS[kind](endpoint))
