"""A frameless, vertical-only scroll area that sizes itself from its content.

The Load dialog's cards and the Welcome window's model cards both want the same thing:
open as tall as the content where the screen has room, scroll (never sideways) where it
has not, and show the page's own background through it. Each says how tall it wants to
be; what they share is the set-up and how tall the content is at a given width.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QWidget

log = logging.getLogger(__name__)


class ContentScroll(QScrollArea):
    def __init__(self, content: QWidget, parent: QWidget | None, *, name: str) -> None:
        super().__init__(parent)
        self.setObjectName(name)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setWidget(content)
        self.viewport().setAutoFillBackground(False)
        content.setAutoFillBackground(False)

    def bar_width(self) -> int:
        """The vertical scroll bar's width: room kept for it, since it may come."""
        return self.verticalScrollBar().sizeHint().width()

    def content_height(self, width: int) -> int:
        """The content's whole height at ``width`` (wrapped labels as tall as that width
        makes them, not as their size hint says); -1 when it has no content."""
        content = self.widget()
        if content is None:
            return -1
        height = content.heightForWidth(width) if content.hasHeightForWidth() else -1
        return height if height > 0 else content.sizeHint().height()
