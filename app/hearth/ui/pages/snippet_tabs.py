"""The Server panel's ready-to-paste client configurations, one tab per client.

The texts are ``hearth config``'s (``core.client_config.SNIPPETS``), shown with a key
placeholder; each tab's Copy button asks the panel for the text with a real key in
(``copy_requested``), since the keys are the panel's. ``SnippetsBox`` is the page's
"Ready-to-paste configuration" card around the tabs; the text views keep a fixed height
so the request log below keeps its room on a 900 px high screen.
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
from hearth.ui.section import Section
from hearth.ui.style.tokens import SPACE

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
VIEW_LINES = 10  # Claude Code's block (and the "turn it on" note) without scrolling


class SnippetTabs(QTabWidget):
    """A read-only view and a Copy button per client."""

    copy_requested = Signal(str)  # the snippet's kind (a key of SNIPPETS)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("snippetTabs")
        self.setAccessibleName("Client configuration")
        self.setDocumentMode(True)  # tabs over the text, no second frame inside the card
        self.setUsesScrollButtons(True)
        self.views: dict[str, QPlainTextEdit] = {}
        self.copy_buttons: dict[str, QPushButton] = {}
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        for kind, title in SNIPPET_TITLES.items():
            page = QWidget(self)
            view = QPlainTextEdit(page)
            view.setReadOnly(True)
            view.setFont(mono)  # shell lines and JSON, as in a terminal or an editor
            view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)  # pasted as shown
            view.setFixedHeight(view.fontMetrics().lineSpacing() * VIEW_LINES + 2 * SPACE["s"])
            view.setAccessibleName(f"{title} configuration")
            copy = QPushButton(f"Copy {title} config", page)
            copy.setAccessibleName(f"Copy {title} configuration")
            copy.setProperty("primary", True)
            copy.clicked.connect(lambda _c=False, k=kind: self.copy_requested.emit(k))
            row = QHBoxLayout()
            row.addStretch(1)
            row.addWidget(copy)
            col = QVBoxLayout(page)
            col.setContentsMargins(0, SPACE["s"], 0, 0)
            col.setSpacing(SPACE["s"])
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


class SnippetsBox(Section):
    """The "Ready-to-paste configuration" card: the tabs and what Copy puts in."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(
            "Ready-to-paste configuration",
            "Settings for your editor or agent, filled in with this endpoint and the "
            "loaded model. Copy puts your selected API key in when one is needed.",
            parent,
            icon_kind="config",
        )
        self.setObjectName("snippetsSection")
        self.tabs = SnippetTabs(self)
        self.body.addWidget(self.tabs)
