"""The window's top row: the main actions, the Chat page's panel toggles, the model
picker.

One row rather than a toolbar above the picker: on a 900x650 screen that row was 40 px
of transcript. Under ``COMPACT_WIDTH`` the actions show icons only (their names stay in
the tooltips), so the picker keeps its room. The panel toggles (chat list, chat
settings) only mean something on the Chat page; elsewhere they are hidden, keeping
their place so the picker does not jump between pages.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFrame, QHBoxLayout, QSizePolicy, QToolBar, QWidget

from hearth.ui.style.theme import tokens_for
from hearth.ui.style.tokens import SPACE

log = logging.getLogger(__name__)


def _toolbar(name: str, parent: QWidget) -> QToolBar:
    bar = QToolBar(name, parent)
    bar.setObjectName("mainToolbar")  # styled as one (ui/style/qss.py)
    bar.setIconSize(QSize(18, 18))
    bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
    return bar


class TopBar(QFrame):  # a frame: a style sheet border needs one
    def __init__(self, model_bar: QWidget, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("topBar")
        self.main = _toolbar("Main", self)
        self.chat = _toolbar("Chat", self)
        # A hairline between the actions and the Chat page's toggles: two groups.
        self.divider = QFrame(self)
        self.divider.setObjectName("topBarDivider")
        self.divider.setFixedSize(1, 20)
        for part in (self.chat, self.divider):
            policy = part.sizePolicy()
            policy.setRetainSizeWhenHidden(True)
            part.setSizePolicy(policy)
        row = QHBoxLayout(self)
        row.setContentsMargins(SPACE["xs"], 0, 0, 0)
        row.setSpacing(0)
        row.addWidget(self.main)
        row.addWidget(self.divider, 0, Qt.AlignmentFlag.AlignVCenter)
        row.addWidget(self.chat)
        row.addWidget(model_bar, 1)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self._tint()

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:
            self._tint()
        super().changeEvent(event)

    def _tint(self) -> None:
        t = tokens_for(self.palette())
        self.divider.setStyleSheet(f"QFrame#topBarDivider {{ background: {t.border}; }}")

    def add_actions(self, main: list[QAction], chat: list[QAction]) -> None:
        for action in main:
            self.main.addAction(action)
        for action in chat:
            self.chat.addAction(action)

    def set_compact(self, compact: bool) -> None:
        """Icons only (narrow window), or icons with their names."""
        style = Qt.ToolButtonStyle
        for bar in (self.main, self.chat):
            bar.setToolButtonStyle(
                style.ToolButtonIconOnly if compact else style.ToolButtonTextBesideIcon
            )

    def show_chat_tools(self, shown: bool) -> None:
        self.chat.setVisible(shown)
        self.divider.setVisible(shown)
