"""A sentence drawn over an empty table's rows, saying what would fill it.

An empty table with only its header reads as "broken" or "loading"; a line such as
"No requests yet: paste a config above into your tool" tells a new user the next step,
as LM Studio's and Jan's empty lists do. The label sits in the view's viewport (so the
header stays visible above it) and follows the viewport's size through an event filter.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QAbstractScrollArea, QLabel

from hearth.ui.style.tokens import SPACE

log = logging.getLogger(__name__)


class EmptyOverlay(QLabel):
    """Muted, centred, word-wrapped text filling ``view``'s viewport; shown by the owner."""

    def __init__(self, view: QAbstractScrollArea, text: str, object_name: str) -> None:
        super().__init__(text, view.viewport())
        self.setObjectName(object_name)
        self.setProperty("role", "muted")
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setWordWrap(True)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self._view = view
        view.viewport().installEventFilter(self)
        self._fit()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if watched is self._view.viewport() and event.type() == QEvent.Type.Resize:
            self._fit()
        return False

    def _fit(self) -> None:
        margin = SPACE["l"]
        self.setGeometry(self._view.viewport().rect().adjusted(margin, 0, -margin, 0))
