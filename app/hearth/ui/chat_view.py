"""The chat pane: transcript, input, Send / Stop / Regenerate, and a stats footer.

Streaming text is never painted per delta: deltas are queued in a ``MarkdownWriter``
and a timer draws them at most every ``FLUSH_INTERVAL_MS`` (~60 fps). Each frame draws
only what is new: finished markdown blocks once, plus the still-growing tail. The view
holds no conversation state; ``ChatController`` drives it.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QEvent, QPoint, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import (
    QColor,
    QDesktopServices,
    QGuiApplication,
    QKeySequence,
    QResizeEvent,
    QShortcut,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
)
from PySide6.QtWidgets import (
    QLabel,
    QStackedWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from hearth.ui.chat_composer import ChatComposer
from hearth.ui.empty_state import chat_empty_state
from hearth.ui.md_render import (
    COPY_SCHEME,
    FOLD_SCHEME,
    MarkdownWriter,
    prepare_document,
    toggle_fold,
)
from hearth.ui.message_card import (
    CARD_SCHEME,
    Card,
    CardHover,
    CardIndex,
    CardMeta,
    MessageActions,
    draw_heading,
    draw_reasoning,
    tint_blocks,
)
from hearth.ui.style.icons import icon
from hearth.ui.style.theme import tokens_for
from hearth.ui.style.tokens import Tokens

log = logging.getLogger(__name__)

FLUSH_INTERVAL_MS = 16
READING_WIDTH = 760  # px of text per line at most; wider windows get side margins


class ChatView(QWidget):
    send_requested = Signal(str)
    stop_requested = Signal()
    regenerate_requested = Signal()
    edit_requested = Signal(int)
    """A user message's Edit was clicked; carries its index in the conversation."""
    message_action = Signal(str, int)
    """A card's action: copy, edit, regenerate, delete, prev, next or think (the
    reasoning fold), with the message's index in the conversation."""
    transcript_updated = Signal()
    """Emitted after each repaint of the transcript (one per coalesced flush)."""
    load_model_requested = Signal()
    """The empty state's "Load a model you have" card."""
    recommended_requested = Signal()
    """The empty state's "Get a recommended model" card."""
    theme_changed = Signal()
    """The palette switched between light and dark: the transcript should be redrawn."""
    empty_changed = Signal(bool)
    """The first-launch empty state was shown (True) or hidden."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tokens: Tokens = tokens_for(self.palette())
        self.transcript = QTextBrowser(self)
        self.transcript.setObjectName("transcript")
        self.transcript.setAccessibleName("Conversation transcript")
        self.transcript.setOpenLinks(False)
        self.transcript.anchorClicked.connect(self._link_clicked)
        prepare_document(self.transcript.document(), self.tokens)
        # An explicit minimum: the reading-width margins below must not raise the
        # transcript's minimum size (and with it the window's).
        self.transcript.setMinimumSize(240, 120)
        self.empty_state = chat_empty_state(
            self.load_model_requested.emit, self.recommended_requested.emit, self
        )
        self.code_blocks: list[list[str]] = []
        self.code_headers: dict[int, int] = {}  # for folding long code blocks
        self.cards = CardIndex()
        self.card_actions = MessageActions(self.tokens, self.transcript.viewport())
        self.card_actions.triggered.connect(self._card_action)
        self._hover = CardHover(
            self.transcript, self.cards, self.card_actions, lambda: self._generating
        )
        self.stats_label = QLabel(self)
        self.stats_label.setObjectName("chatStats")
        self.stats_label.setAccessibleName("Reply statistics")
        self.stats_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.edit_banner = QLabel(self)
        self.edit_banner.setObjectName("editBanner")
        self.edit_banner.hide()
        composer = ChatComposer(self)
        self.input = composer.input
        self.send_button, self.stop_button = composer.send_button, composer.stop_button
        self.regenerate_button = composer.regenerate_button
        self.chat_page = chat = QWidget(self)
        col = QVBoxLayout(chat)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(0)
        col.addWidget(self.transcript, 1)
        col.addWidget(self.stats_label)
        col.addWidget(self.edit_banner)
        col.addWidget(composer)
        self.body = QStackedWidget(self)
        self.body.addWidget(chat)
        self.body.addWidget(self.empty_state)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.body)
        self._refresh_icons()

        self._can_send = False
        self._can_regenerate = False
        self._generating = False
        self._writer: MarkdownWriter | None = None
        self.streamed_chars = 0
        self.flush_count = 0
        self._flush_timer = QTimer(self)
        self._flush_timer.setInterval(FLUSH_INTERVAL_MS)
        self._flush_timer.timeout.connect(self.flush)

        self.send_button.clicked.connect(self._submit)
        self.input.submitted.connect(self._submit)
        self.stop_button.clicked.connect(self._stop)
        self.regenerate_button.clicked.connect(self.regenerate_requested.emit)
        # Esc stops a reply from anywhere in the window (the chat search box included).
        stop_shortcut = QShortcut(QKeySequence(Qt.Key.Key_Escape), self)
        stop_shortcut.setContext(Qt.ShortcutContext.WindowShortcut)
        stop_shortcut.activated.connect(self._escape)
        self.transcript_updated.connect(self._update_empty)
        self._update_buttons()
        self._update_empty()

    # ------------------------------------------------------------------ state
    @property
    def generating(self) -> bool:
        return self._generating

    def set_can_send(self, can_send: bool) -> None:
        """Whether a model is ready to answer."""
        self._can_send = can_send
        self._update_buttons()
        self._update_empty()

    @property
    def showing_empty_state(self) -> bool:
        return self.body.currentWidget() is self.empty_state

    def _update_empty(self) -> None:
        """No model and nothing to show: the cards with the next step, not a blank page."""
        empty = not self._can_send and not self._generating and self.transcript.document().isEmpty()
        if empty != self.showing_empty_state:
            self.body.setCurrentWidget(self.empty_state if empty else self.chat_page)
            self.empty_changed.emit(empty)

    # ------------------------------------------------------------------ theme
    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:
            tokens = tokens_for(self.palette())
            if tokens is not self.tokens:
                self.tokens = tokens
                prepare_document(self.transcript.document(), tokens)
                self.card_actions.set_tokens(tokens)
                self._refresh_icons()
                self.theme_changed.emit()
        super().changeEvent(event)

    def _refresh_icons(self) -> None:
        t = self.tokens
        self.send_button.setIcon(icon("send", t, color=t.on_accent))
        self.stop_button.setIcon(icon("stop", t))
        self.regenerate_button.setIcon(icon("regenerate", t))

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        """Keep lines at a reading width: wide windows get margins on both sides."""
        super().resizeEvent(event)
        side = max(0, (self.transcript.width() - READING_WIDTH) // 2)
        self.transcript.setViewportMargins(side, 0, side, 0)

    def set_can_regenerate(self, can: bool) -> None:
        self._can_regenerate = can
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
        idle = self._can_send and not self._generating
        self.send_button.setEnabled(idle)
        self.stop_button.setEnabled(self._generating)
        self.regenerate_button.setEnabled(idle and self._can_regenerate)

    def _stop(self) -> None:
        if self._generating:
            self.stop_requested.emit()

    def _escape(self) -> None:
        if self._generating:
            self.stop_requested.emit()
        elif self.edit_banner.isVisible():
            self.set_editing(None)
            self.input.clear()

    def _submit(self) -> None:
        text = self.input.toPlainText().strip()
        if not text or not self.send_button.isEnabled():
            return
        self.input.clear()
        self.send_requested.emit(text)

    def set_editing(self, text: str | None) -> None:
        """Show (or hide, with None) the "editing a message" bar above the input."""
        if text is None:
            self.edit_banner.hide()
            return
        self.edit_banner.setText("Editing a message: Ctrl+Enter resends it, Esc cancels.")
        self.edit_banner.show()
        self.input.setPlainText(text)
        self.input.setFocus()

    def set_stats(self, text: str) -> None:
        self.stats_label.setText(text)

    # ------------------------------------------------------------------ transcript
    def _end(self) -> QTextCursor:
        cursor = QTextCursor(self.transcript.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        return cursor

    def _following(self) -> bool:
        bar = self.transcript.verticalScrollBar()
        return bar.value() >= bar.maximum() - 4

    def _scroll_to_end(self) -> None:
        bar = self.transcript.verticalScrollBar()
        bar.setValue(bar.maximum())

    def _card(self, role: str, index: int | None, meta: CardMeta) -> int:
        """Start a card at the end: its heading, then an empty block for the body.
        Returns where the card starts."""
        cursor = self._end()
        start = cursor.position() + (0 if self.transcript.document().isEmpty() else 1)
        n = index if index is not None else len(self.cards)
        draw_heading(cursor, self.tokens, role, n, meta)
        self.cards.add(Card(n, role, start))
        self._end().insertBlock(QTextBlockFormat(), QTextCharFormat())
        return start

    def _new_writer(self) -> MarkdownWriter:
        """A writer for the message whose (empty) body block ends the document."""
        return MarkdownWriter(
            self.transcript.document(),
            self.code_blocks,
            reuse_last_block=True,
            tokens=self.tokens,
            code_headers=self.code_headers,
        )

    def add_user_turn(self, text: str, index: int | None = None) -> None:
        """The user's message, as markdown, on the bubble's tint."""
        follow = self._following()
        start = self._card("user", index, CardMeta())
        writer = self._new_writer()
        writer.set_text(text)
        tint_blocks(self._end(), start, self.tokens)
        if follow:
            self._scroll_to_end()
        self.transcript_updated.emit()

    def add_assistant_message(
        self,
        text: str,
        note: str | None = None,
        *,
        error: bool = False,
        index: int | None = None,
        meta: CardMeta | None = None,
    ) -> None:
        """A finished reply from the history, drawn at once."""
        meta = meta or CardMeta()
        self._card("assistant", index, meta)
        if meta.reasoning:
            draw_reasoning(self._end(), self.tokens, self.cards.last_index(), meta)
        writer = self._new_writer()
        writer.set_text(text)
        if note:
            self._note(note, error=error, separate=bool(text))
        self.transcript_updated.emit()

    def begin_assistant_turn(self, index: int | None = None, meta: CardMeta | None = None) -> None:
        self.flush()
        self.streamed_chars = 0
        self._card("assistant", index, meta or CardMeta())  # the reply goes in its body
        self._writer = self._new_writer()
        self._scroll_to_end()
        self.transcript_updated.emit()

    def show_reasoning(self, meta: CardMeta) -> None:
        """The streaming reply finished thinking: its fold goes above the answer (call
        before the answer's first delta)."""
        if self._writer is None or self.streamed_chars or self._writer.has_pending:
            return
        draw_reasoning(self._end(), self.tokens, self.cards.last_index(), meta)
        self.transcript_updated.emit()

    def append_delta(self, text: str) -> None:
        """Queue streamed text; it appears at the next flush (≤ ~16 ms)."""
        if self._writer is None:
            self.begin_assistant_turn()
        assert self._writer is not None
        self._writer.append(text)
        self.streamed_chars += len(text)
        if not self._flush_timer.isActive():
            self._flush_timer.start()

    def flush(self) -> None:
        writer = self._writer
        if writer is None or not writer.has_pending:
            return
        follow = self._following()
        writer.render()
        if follow:
            self._scroll_to_end()
        self.flush_count += 1
        self.transcript_updated.emit()

    def end_assistant_turn(self, note: str | None = None, *, error: bool = False) -> None:
        """Close the reply; ``note`` (e.g. "stopped" or an error) is shown after it."""
        follow = self._following()
        if self._writer is not None:
            self._writer.finish()
            self._writer = None
        if note:
            self._note(note, error=error, separate=self.streamed_chars > 0)
        if follow:
            self._scroll_to_end()
        self.transcript_updated.emit()

    def _note(self, note: str, *, error: bool, separate: bool) -> None:
        fmt = QTextCharFormat()
        fmt.setForeground(QColor(self.tokens.danger if error else self.tokens.text_muted))
        fmt.setFontItalic(True)
        cursor = self._end()
        if separate and cursor.block().length() > 1:
            cursor.insertBlock(QTextBlockFormat(), fmt)
        cursor.insertText(f"[{note}]", fmt)

    def clear_transcript(self) -> None:
        self._writer = None
        self.code_blocks.clear()
        self.code_headers.clear()
        self.cards.clear()
        self.card_actions.hide()
        self.transcript.clear()
        self.stats_label.clear()
        self.transcript_updated.emit()

    def transcript_text(self) -> str:
        return self.transcript.toPlainText()

    # ------------------------------------------------------------------ links
    def copy_code(self, index: int) -> str:
        """Put code block ``index`` on the clipboard; returns its text."""
        text = "\n".join(self.code_blocks[index]) if 0 <= index < len(self.code_blocks) else ""
        QGuiApplication.clipboard().setText(text)
        return text

    def fold_code(self, index: int) -> bool:
        """Fold or show long code block ``index``; True when it is now folded."""
        if index not in self.code_headers:
            return False
        doc = self.transcript.document()
        folded = toggle_fold(doc, self.code_headers[index], len(self.code_blocks[index]))
        self.transcript.viewport().update()
        return folded

    def _link_clicked(self, url: QUrl) -> None:
        href = url.toString()
        if href.startswith(COPY_SCHEME):
            self.copy_code(int(href[len(COPY_SCHEME) :]))
        elif href.startswith(FOLD_SCHEME):
            self.fold_code(int(href[len(FOLD_SCHEME) :]))
        elif href.startswith(CARD_SCHEME):
            kind, _, index = href[len(CARD_SCHEME) :].partition(":")
            self._card_action(kind, int(index))
        elif url.scheme() in ("http", "https"):
            QDesktopServices.openUrl(url)
        else:
            log.info("ignored link %s", href)

    # ------------------------------------------------------------------ cards
    def _card_action(self, kind: str, index: int) -> None:
        if kind == "edit":
            self.edit_requested.emit(index)
        self.message_action.emit(kind, index)

    def hover(self, pos: QPoint) -> Card | None:
        """Show the actions of the card at viewport position ``pos``; that card."""
        return self._hover.hover(pos)
