"""The chat pane: transcript, multi-line input, Send and Stop.

Streaming text is not painted per delta: deltas are buffered and flushed into the
transcript by a timer at about 30 fps, so a fast model never makes the UI the
bottleneck. The view holds no conversation state; ``ChatController`` drives it.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QKeyEvent, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QHBoxLayout,
    QPlainTextEdit,
    QPushButton,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

log = logging.getLogger(__name__)

FLUSH_INTERVAL_MS = 33
ROLE_TITLES = {"user": "You", "assistant": "Assistant"}


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


class ChatView(QWidget):
    send_requested = Signal(str)
    stop_requested = Signal()
    transcript_updated = Signal()
    """Emitted after each repaint of the transcript (one per coalesced flush)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.transcript = QTextBrowser(self)
        self.transcript.setObjectName("transcript")
        self.transcript.setOpenExternalLinks(False)
        self.input = ChatInput(self)
        self.input.setObjectName("chatInput")
        self.input.setPlaceholderText("Type a message — Ctrl+Enter to send")
        self.input.setMaximumHeight(120)
        self.send_button = QPushButton("Send", self)
        self.send_button.setObjectName("sendButton")
        self.send_button.setToolTip("Send (Ctrl+Enter)")
        self.stop_button = QPushButton("Stop", self)
        self.stop_button.setObjectName("stopButton")

        buttons = QVBoxLayout()
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        buttons.addStretch(1)
        bottom = QHBoxLayout()
        bottom.addWidget(self.input, 1)
        bottom.addLayout(buttons)
        layout = QVBoxLayout(self)
        layout.addWidget(self.transcript, 1)
        layout.addLayout(bottom)

        self._can_send = False
        self._generating = False
        self._pending: list[str] = []
        self._reply_chars = 0
        self.flush_count = 0
        self._flush_timer = QTimer(self)
        self._flush_timer.setInterval(FLUSH_INTERVAL_MS)
        self._flush_timer.timeout.connect(self.flush)

        self.send_button.clicked.connect(self._submit)
        self.input.submitted.connect(self._submit)
        self.stop_button.clicked.connect(self._stop)
        self._update_buttons()

    # ------------------------------------------------------------------ state
    @property
    def generating(self) -> bool:
        return self._generating

    def set_can_send(self, can_send: bool) -> None:
        """Whether a model is ready to answer."""
        self._can_send = can_send
        self._update_buttons()

    def set_generating(self, generating: bool) -> None:
        self._generating = generating
        if generating:
            self._flush_timer.start()
        else:
            self._flush_timer.stop()
            self.flush()
        self._update_buttons()

    def _update_buttons(self) -> None:
        self.send_button.setEnabled(self._can_send and not self._generating)
        self.stop_button.setEnabled(self._generating)

    def _stop(self) -> None:
        if self._generating:
            self.stop_requested.emit()

    def _submit(self) -> None:
        text = self.input.toPlainText().strip()
        if not text or not self.send_button.isEnabled():
            return
        self.input.clear()
        self.send_requested.emit(text)

    # ------------------------------------------------------------------ transcript
    def _cursor_at_end(self) -> QTextCursor:
        cursor = self.transcript.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.End)
        return cursor

    def _insert(self, text: str, fmt: QTextCharFormat) -> None:
        bar = self.transcript.verticalScrollBar()
        follow = bar.value() >= bar.maximum() - 4
        self._cursor_at_end().insertText(text, fmt)
        if follow:
            bar.setValue(bar.maximum())

    def _start_turn(self, role: str) -> None:
        heading = QTextCharFormat()
        heading.setFontWeight(QFont.Weight.Bold)
        prefix = "\n\n" if not self.transcript.document().isEmpty() else ""
        self._insert(f"{prefix}{ROLE_TITLES.get(role, role)}\n", heading)

    def add_user_turn(self, text: str) -> None:
        self._start_turn("user")
        self._insert(text, QTextCharFormat())
        self.transcript_updated.emit()

    def begin_assistant_turn(self) -> None:
        self.flush()
        self._reply_chars = 0
        self._start_turn("assistant")
        self.transcript_updated.emit()

    def append_delta(self, text: str) -> None:
        """Queue streamed text; it appears at the next flush (≤ ~33 ms)."""
        self._pending.append(text)
        if not self._flush_timer.isActive():
            self._flush_timer.start()

    def flush(self) -> None:
        if not self._pending:
            return
        text = "".join(self._pending)
        self._pending.clear()
        self._reply_chars += len(text)
        self._insert(text, QTextCharFormat())
        self.flush_count += 1
        self.transcript_updated.emit()

    def end_assistant_turn(self, note: str | None = None, *, error: bool = False) -> None:
        """Close the reply; ``note`` (e.g. "stopped" or an error) is shown after it."""
        self.flush()
        if note:
            fmt = QTextCharFormat()
            fmt.setForeground(QColor("#b00020") if error else QColor("#777777"))
            fmt.setFontItalic(True)
            sep = "\n" if self._reply_chars else ""
            self._insert(f"{sep}[{note}]", fmt)
            self.transcript_updated.emit()

    def clear_transcript(self) -> None:
        self._pending.clear()
        self.transcript.clear()
        self.transcript_updated.emit()

    def transcript_text(self) -> str:
        return self.transcript.toPlainText()
