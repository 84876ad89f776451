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
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from hearth.core.client_config import SNIPPETS, Endpoint
from hearth.ui.style.tokens import SPACE
from hearth.ui.widgets.section import Section

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
VIEW_LINES = 9  # Claude Code's block without scrolling; longer ones scroll inside


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
        self.notices: dict[str, QLabel] = {}  # beside Copy: why it would not work yet
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        for kind, title in SNIPPET_TITLES.items():
            page = QWidget(self)
            view = QPlainTextEdit(page)
            view.setReadOnly(True)
            view.setFont(mono)  # shell lines and JSON, as in a terminal or an editor
            view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)  # pasted as shown
            # The lines, plus the frame, the stylesheet's padding and the document margin.
            view.setFixedHeight(view.fontMetrics().lineSpacing() * VIEW_LINES + 2 * SPACE["m"])
            view.setAccessibleName(f"{title} configuration")
            copy = QPushButton(f"Copy {title} config", page)
            copy.setAccessibleName(f"Copy {title} configuration")
            copy.setProperty("primary", True)
            copy.clicked.connect(lambda _c=False, k=kind: self.copy_requested.emit(k))
            notice = QLabel(page)
            notice.setObjectName("snippetNotice")
            notice.setWordWrap(True)
            row = QHBoxLayout()
            row.setSpacing(SPACE["m"])
            row.addWidget(notice, 1)
            row.addWidget(copy)
            col = QVBoxLayout(page)
            col.setContentsMargins(0, SPACE["s"], 0, 0)
            col.setSpacing(SPACE["s"])
            col.addWidget(view)
            col.addLayout(row)
            self.addTab(page, title)
            self.views[kind] = view
            self.copy_buttons[kind] = copy
            self.notices[kind] = notice

    def show_endpoint(self, endpoint: Endpoint, *, enabled: bool, loaded: bool = True) -> None:
        """Every snippet for ``endpoint``, exactly as Copy gives it (but for the key); a
        line beside Copy says when it would not work yet (the endpoint off, no model)."""
        if not enabled:
            note = "The endpoint is off: turn it on first, these settings point at it."
        elif not loaded:
            note = f'No model is loaded yet: "{endpoint.model}" stands for its name.'
        else:
            note = ""
        for kind, view in self.views.items():
            view.setPlainText(SNIPPETS[kind](endpoint))
            self.notices[kind].setText(note)


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
