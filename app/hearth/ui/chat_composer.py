"""The chat's composer: the message input (Ctrl+Enter sends) and its buttons.

``ChatView`` decides when the buttons are enabled and what they do; this only builds
them, so the view's module stays about the transcript.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QHBoxLayout, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from hearth.ui.style.tokens import SPACE


class ChatInput(QPlainTextEdit):
    """Multi-line input; Ctrl+Enter submits (plain Enter inserts a newline)."""

    submitted = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt override
        enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if enter and event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self.submitted.emit()
            event.accept()
            return
        super().keyPressEvent(event)


class ChatComposer(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chatComposer")
        self.input = ChatInput(self)
        self.input.setObjectName("chatInput")
        self.input.setAccessibleName("Message")
        self.input.setPlaceholderText("Type a message — Ctrl+Enter to send")
        self.input.setMaximumHeight(100)
        self.send_button = self._button("Send", "sendButton", "Send (Ctrl+Enter)")
        self.stop_button = self._button("Stop", "stopButton", "Stop generating (Esc)")
        self.regenerate_button = self._button(
            "Regenerate", "regenerateButton", "Write the last reply again"
        )
        self.send_button.setProperty("primary", True)
        buttons = QVBoxLayout()
        buttons.setSpacing(SPACE["xs"])
        for button in (self.send_button, self.stop_button, self.regenerate_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        row = QHBoxLayout(self)
        row.setContentsMargins(SPACE["l"], SPACE["s"], SPACE["l"], SPACE["s"])
        row.addWidget(self.input, 1)
        row.addLayout(buttons)

    def _button(self, text: str, name: str, tip: str) -> QPushButton:
        button = QPushButton(text, self)
        button.setObjectName(name)
        button.setToolTip(tip)
        button.setAccessibleName(text)
        return button
