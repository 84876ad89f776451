"""The Server page's layout: two columns on a wide window, one on a narrow one.

At 1400x900 everything fits without scrolling the way LM Studio's Developer page does:
the endpoint and its keys in a side column on the left, the configs and the live request
log (which needs the width for its ten columns) on the right. Under ``WIDE_MIN_PX`` the
right column would squeeze the log, so the cards stack instead: the endpoint and the keys
side by side on top, then the configs, then the log, and the page scrolls (the window
hosts it in a scroll area).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from PySide6.QtWidgets import QBoxLayout, QLabel, QVBoxLayout, QWidget

from hearth.ui.style.tokens import SPACE

log = logging.getLogger(__name__)

WIDE_MIN_PX = 1180  # the page's width from which the log fits beside the side column
SIDE_PX = 400  # the side column: the address, the switch and the keys' three columns
INTRO = (
    "Let other apps on this computer (editors, agents, scripts) use the loaded model "
    "through an OpenAI-, Anthropic- and Ollama-compatible endpoint."
)
Direction = QBoxLayout.Direction


class ServerColumns:
    """Lays ``side`` and ``main`` sections out on ``page`` and refits them by width."""

    def __init__(self, page: QWidget, *, side: Sequence[QWidget], main: Sequence[QWidget]) -> None:
        self.title = QLabel("Server", page)
        self.title.setProperty("role", "title")
        self.intro = QLabel(INTRO, page)
        self.intro.setObjectName("serverIntro")
        self.intro.setProperty("role", "muted")
        self.intro.setWordWrap(True)
        self.side = QWidget(page)
        self.side.setObjectName("serverSide")
        self.side_layout = QBoxLayout(Direction.TopToBottom, self.side)
        self.side_layout.setContentsMargins(0, 0, 0, 0)
        self.side_layout.setSpacing(SPACE["l"])
        for section in side:
            self.side_layout.addWidget(section)
        self.main = QWidget(page)
        self.main.setObjectName("serverMain")
        main_layout = QVBoxLayout(self.main)
        main_layout.setContentsMargins(0, 0, 0, 0)
        main_layout.setSpacing(SPACE["l"])
        for section in main:
            main_layout.addWidget(section)
        main_layout.setStretch(len(main) - 1, 1)  # the last one (the log) takes the rest
        self.body = QBoxLayout(Direction.LeftToRight)
        self.body.setSpacing(SPACE["l"])
        self.body.addWidget(self.side)
        self.body.addWidget(self.main, 1)
        header = QVBoxLayout()
        header.setSpacing(SPACE["xs"])
        header.addWidget(self.title)
        header.addWidget(self.intro)
        outer = QVBoxLayout(page)
        outer.setContentsMargins(SPACE["xl"], SPACE["l"], SPACE["xl"], SPACE["xl"])
        outer.setSpacing(SPACE["l"])
        outer.addLayout(header)
        outer.addLayout(self.body, 1)
        self.wide: bool | None = None
        self.fit(page.width())

    def fit(self, width: int) -> None:
        """Two columns from ``WIDE_MIN_PX``, else stacked cards."""
        wide = width >= WIDE_MIN_PX
        if wide is self.wide:
            return
        self.wide = wide
        last = self.side_layout.count() - 1
        if wide:
            self.body.setDirection(Direction.LeftToRight)
            self.side_layout.setDirection(Direction.TopToBottom)
            self.side.setFixedWidth(SIDE_PX)
            for i in range(last + 1):  # the keys' card reaches down to the log's foot
                self.side_layout.setStretch(i, 1 if i == last else 0)
        else:
            self.body.setDirection(Direction.TopToBottom)
            self.side_layout.setDirection(Direction.LeftToRight)
            self.side.setMinimumWidth(0)
            self.side.setMaximumWidth(16777215)  # QWIDGETSIZE_MAX
            for i in range(last + 1):  # side by side, sharing the width
                self.side_layout.setStretch(i, 1)
        log.debug("server page: %s", "two columns" if wide else "stacked")
