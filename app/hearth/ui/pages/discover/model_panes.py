"""The model page's two panes: the files table and the model card, side by side on a
wide page and one above the other on a narrow one.

Side by side, the files take three fifths of the width (the card reads fine
narrower); stacked, the files take what their rows need and the card the rest. Either
way there is room on both sides of the splitter's line.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QVBoxLayout, QWidget

from hearth.ui.style.tokens import SPACE

log = logging.getLogger(__name__)

SIDE_BY_SIDE_WIDTH = 1000  # px: a narrower page puts the model card under the table
FILES_SHARE = 3 / 5


class ModelPanes(QSplitter):
    """``files`` (a widget capped at its rows' height) and ``card`` in a splitter."""

    def __init__(self, files: QWidget, card: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.files = files
        left, right = QWidget(self), QWidget(self)
        self._left_col = QVBoxLayout(left)
        self._left_col.addWidget(files, 1)
        self._left_col.addStretch(0)  # under a short table
        self._right_col = QVBoxLayout(right)
        self._right_col.addWidget(card)
        self.addWidget(left)
        self.addWidget(right)
        self.setStretchFactor(0, 3)
        self.setStretchFactor(1, 2)
        self.setChildrenCollapsible(False)
        self._sized = False
        self._space()

    def follow_width(self, page_width: int) -> None:
        """Stack the panes under ``SIDE_BY_SIDE_WIDTH``, else side by side."""
        narrow = page_width < SIDE_BY_SIDE_WIDTH
        orientation = Qt.Orientation.Vertical if narrow else Qt.Orientation.Horizontal
        if orientation != self.orientation() or not self._sized:
            self.setOrientation(orientation)
            self._space()
            self.share()

    def share(self) -> None:
        """Give each pane its share (again after the files changed)."""
        self._sized = self.isVisible()
        if self.orientation() is Qt.Orientation.Horizontal:
            room = self.width()
            files = int(room * FILES_SHARE)
        else:
            room = self.height()
            files = min(self.files.maximumHeight() + SPACE["m"], int(room * FILES_SHARE))
        self.setSizes([files, room - files])

    def _space(self) -> None:
        gap = SPACE["m"]
        if self.orientation() is Qt.Orientation.Horizontal:
            self._left_col.setContentsMargins(0, 0, gap, 0)
            self._right_col.setContentsMargins(gap, 0, 0, 0)
        else:
            self._left_col.setContentsMargins(0, 0, 0, gap)
            self._right_col.setContentsMargins(0, gap, 0, 0)
