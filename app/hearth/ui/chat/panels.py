"""Which side panels of the Chat page show: the chat list and the chat's settings.

Each has a toolbar toggle. In a narrow window (under ``COMPACT_WIDTH``) both fold away
when the window gets there, so the transcript keeps its room; the toggles still open
them. While the first-launch empty state shows, the settings panel has nothing to
say (no model, no chat), so it stays hidden and its toggle is off.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QWidget

log = logging.getLogger(__name__)

COMPACT_WIDTH = 1000


class ChatPanels(QObject):
    def __init__(self, window: QWidget, sidebar: QWidget, settings_panel: QWidget) -> None:
        super().__init__(window)
        self.sidebar = sidebar
        self.settings_panel = settings_panel
        self.compact = False
        self.empty = False
        self.chats_action = QAction("C&hats", window)
        self.chats_action.setCheckable(True)
        self.chats_action.setChecked(True)
        self.chats_action.setShortcut(QKeySequence("Ctrl+Shift+H"))
        self.chats_action.setToolTip("Show or hide the list of chats")
        self.settings_action = QAction("Chat &settings", window)
        self.settings_action.setCheckable(True)
        self.settings_action.setChecked(True)
        self.settings_action.setToolTip("Show or hide the chat's settings")
        self.chats_action.toggled.connect(self._apply)
        self.settings_action.toggled.connect(self._apply)

    def set_empty(self, empty: bool) -> None:
        """The first-launch empty state was shown or hidden."""
        self.empty = empty
        self.settings_action.setEnabled(not empty)
        self._apply()

    def window_resized(self, width: int) -> None:
        """Fold both panels when the window becomes narrow; unfold when it widens."""
        compact = width < COMPACT_WIDTH
        if compact == self.compact:
            return
        self.compact = compact
        for action in (self.chats_action, self.settings_action):
            action.blockSignals(True)
            action.setChecked(not compact)
            action.blockSignals(False)
        self._apply()

    def _apply(self) -> None:
        self.sidebar.setVisible(self.chats_action.isChecked())
        self.settings_panel.setVisible(self.settings_action.isChecked() and not self.empty)
