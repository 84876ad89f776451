"""Counting a user's clicks: the first-run tests hold the app to a click budget."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QWidget


class ClickCounter(QObject):
    """Counts mouse clicks delivered anywhere in the app (installed as an event filter
    on the application by the ``click_counter`` fixture)."""

    def __init__(self) -> None:
        super().__init__()
        self.clicks = 0

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.MouseButtonRelease and isinstance(watched, QWidget):
            self.clicks += 1
        return False
