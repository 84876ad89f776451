"""The chat pane: transcript, a stats line with Regenerate, and the composer.

The pane decides what can be done (buttons, Esc, the first-launch empty state, the
theme, the reading width); the transcript itself, drawn as replies stream, is
``chat_transcript.ChatTranscript``, and the message box with its Send/Stop button is
``chat_composer.ChatComposer``. Regenerate sits at the end of the stats line (the
last reply's own line), not in the composer, which stays one line tall in a small
window. The view holds no conversation state; ``ChatController`` drives it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from PySide6.QtCore import QEvent, QPoint, Qt, Signal
from PySide6.QtGui import QKeySequence, QResizeEvent, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from hearth.chats import ToolCallRecord
from hearth.chats.attachments import PassageHit
from hearth.chats.images import ImageData
from hearth.ui.chat.composer import ChatComposer
from hearth.ui.chat.document_bar import DocumentBar, attach_button
from hearth.ui.chat.md_render import MarkdownWriter
from hearth.ui.chat.message_card import Card, CardMeta
from hearth.ui.chat.transcript import ChatTranscript, show_copied
from hearth.ui.style.icons import icon
from hearth.ui.style.theme import tokens_for
from hearth.ui.style.tokens import SPACE, Tokens
from hearth.ui.widgets.empty_state import chat_empty_state

log = logging.getLogger(__name__)

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
    attach_requested = Signal()
    """The composer's Attach button: pick documents for this chat."""
    source_requested = Signal(int, int)
    """A reply's source was clicked: (message index, passage index)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tokens: Tokens = tokens_for(self.palette())
        self.transcript = ChatTranscript(self.tokens, lambda: self._generating, self)
        self.transcript.card_action.connect(self._card_action)
        self.transcript.updated.connect(self.transcript_updated.emit)
        self.transcript.source_requested.connect(self.source_requested.emit)
        self.empty_state = chat_empty_state(
            self.load_model_requested.emit, self.recommended_requested.emit, self
        )
        # The transcript's own (the same objects), kept here for callers and tests.
        self.code_blocks = self.transcript.code_blocks
        self.cards = self.transcript.cards
        self.card_actions = self.transcript.card_actions
        self.stats_label = QLabel(self)
        self.stats_label.setObjectName("chatStats")
        self.stats_label.setAccessibleName("Reply statistics")
        self.stats_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.edit_banner = QLabel(self)
        self.edit_banner.setObjectName("editBanner")
        self.edit_banner.hide()
        self.regenerate_button = QToolButton(self)
        self.regenerate_button.setObjectName("regenerateButton")
        self.regenerate_button.setText("Regenerate")
        self.regenerate_button.setToolTip("Write the last reply again (the others are kept)")
        self.regenerate_button.setAccessibleName("Regenerate")
        self.regenerate_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.regenerate_button.setAutoRaise(True)
        self.regenerate_button.setCursor(Qt.CursorShape.PointingHandCursor)
        keep = self.regenerate_button.sizePolicy()
        keep.setRetainSizeWhenHidden(True)  # the stats line keeps its height: no jump
        self.regenerate_button.setSizePolicy(keep)
        self.composer = composer = ChatComposer(self)
        self.input = composer.input
        self.send_button, self.stop_button = composer.send_button, composer.stop_button
        self.attach_button = attach_button(self.tokens, composer)
        composer.add_tool(self.attach_button)
        self.attach_button.clicked.connect(self.attach_requested.emit)
        self.chat_page = chat = QWidget(self)
        col = QVBoxLayout(chat)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(0)
        col.addWidget(self.transcript, 1)
        self.footer = QWidget(chat)  # stats, edit banner, composer: at the reading width
        self.footer.setObjectName("chatFooter")
        self.footer.setAttribute(Qt.WidgetAttribute.WA_StyledBackground)
        self._foot = foot = QVBoxLayout(self.footer)
        foot.setContentsMargins(0, 0, 0, 0)
        foot.setSpacing(0)
        stats_row = QHBoxLayout()
        stats_row.setContentsMargins(0, 0, SPACE["l"], 0)  # Regenerate lines up with Send
        stats_row.setSpacing(SPACE["s"])
        stats_row.addWidget(self.stats_label, 1)
        stats_row.addWidget(self.regenerate_button)
        foot.addLayout(stats_row)
        foot.addWidget(self.edit_banner)
        self.documents = DocumentBar(self.footer)  # the chat's documents, as chips
        foot.addWidget(self.documents)
        foot.addWidget(composer)
        col.addWidget(self.footer)
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
                self.transcript.set_tokens(tokens)
                self._refresh_icons()
                self.theme_changed.emit()
        super().changeEvent(event)

    def _refresh_icons(self) -> None:
        t = self.tokens
        self.send_button.setIcon(icon("send", t, color=t.on_accent))
        self.stop_button.setIcon(icon("stop", t, color=t.on_accent))
        self.regenerate_button.setIcon(icon("regenerate", t))
        self.attach_button.setIcon(icon("attach", t))
        self.composer.attach_button.setIcon(icon("attach_image", t))
        self.composer.images.set_tokens(t)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        """Keep lines at a reading width: wide windows get margins on both sides (the
        transcript and the footer span the view: its width, as the transcript's may
        not be laid out yet)."""
        super().resizeEvent(event)
        side = max(0, (event.size().width() - READING_WIDTH) // 2)
        self.transcript.setViewportMargins(side, 0, side, 0)
        self._foot.setContentsMargins(side, 0, side, 0)

    def set_can_regenerate(self, can: bool) -> None:
        self._can_regenerate = can
        self._update_buttons()

    def set_generating(self, generating: bool) -> None:
        self._generating = generating
        self.transcript.set_streaming(generating)
        self._update_buttons()

    def _update_buttons(self) -> None:
        idle = self._can_send and not self._generating
        self.send_button.setEnabled(idle)
        self.stop_button.setEnabled(self._generating)
        self.composer.set_generating(self._generating)
        self.composer.set_can_send(self._can_send)
        can_regenerate = idle and self._can_regenerate
        self.regenerate_button.setEnabled(can_regenerate)
        self.regenerate_button.setVisible(can_regenerate)  # only when there's a reply to redo

    def _stop(self) -> None:
        if self._generating:
            self.stop_requested.emit()

    def _escape(self) -> None:
        if self._generating:
            self.stop_requested.emit()
        elif self.edit_banner.isVisible():
            self.set_editing(None)
            self.input.clear()
            self.composer.images.take()  # the edited message's images, put there to edit

    def _submit(self) -> None:
        text = self.input.toPlainText().strip()
        if not (text or self.composer.images.items) or not self.send_button.isEnabled():
            return
        if self.composer.images.hold_send():  # an image still being read: it waits
            return
        self.input.clear()
        self.send_requested.emit(text)

    def take_images(self) -> list[ImageData]:
        """The composer's images, for the message being sent (the tray empties)."""
        return self.composer.images.take()

    def set_editing(self, text: str | None) -> None:
        """Show (or hide, with None) the "editing a message" bar above the input."""
        if text is None:
            self.edit_banner.hide()
            return
        self.edit_banner.setText("Editing a message: Enter resends it, Esc cancels.")
        self.edit_banner.show()
        self.input.setPlainText(text)
        self.input.setFocus()

    def set_stats(self, text: str) -> None:
        self.stats_label.setText(text)

    # ------------------------------------------------------------------ transcript
    # What ChatController draws; the drawing itself is ChatTranscript's.
    def add_user_turn(
        self, text: str, index: int | None = None, images: Sequence[ImageData] = ()
    ) -> None:
        self.transcript.add_user_turn(text, index, images)

    def add_assistant_message(
        self,
        text: str,
        note: str | None = None,
        *,
        error: bool = False,
        index: int | None = None,
        meta: CardMeta | None = None,
    ) -> None:
        self.transcript.add_assistant_message(text, note, error=error, index=index, meta=meta)

    def begin_assistant_turn(self, index: int | None = None, meta: CardMeta | None = None) -> None:
        self.transcript.begin_assistant_turn(index, meta)

    def show_reasoning(self, meta: CardMeta) -> None:
        self.transcript.show_reasoning(meta)

    def add_sources(self, index: int, sources: Sequence[PassageHit], open_: bool) -> None:
        self.transcript.add_sources(index, sources, open_)

    def append_delta(self, text: str) -> None:
        self.transcript.append_delta(text)

    def show_tool_calls(self, calls: list[tuple[int, ToolCallRecord]]) -> None:
        self.transcript.show_tool_calls(calls)

    def flush(self) -> None:
        self.transcript.flush()

    def end_assistant_turn(self, note: str | None = None, *, error: bool = False) -> None:
        self.transcript.end_assistant_turn(note, error=error)

    def clear_transcript(self) -> None:
        self.transcript.reset()
        self.stats_label.clear()
        self.transcript_updated.emit()

    def transcript_text(self) -> str:
        return self.transcript.toPlainText()

    @property
    def streamed_chars(self) -> int:
        """Characters of the current reply received so far (shown or queued)."""
        return self.transcript.streamed_chars

    @property
    def flush_count(self) -> int:
        """Frames drawn since the view was made."""
        return self.transcript.flush_count

    @property
    def _writer(self) -> MarkdownWriter | None:  # bench/ui.py times its renders
        return self.transcript.writer

    def copy_code(self, index: int) -> str:
        """Put code block ``index`` on the clipboard; returns its text."""
        return self.transcript.copy_code(index)

    def fold_code(self, index: int) -> bool:
        """Fold or show long code block ``index``; True when it is now folded."""
        return self.transcript.fold_code(index)

    # ------------------------------------------------------------------ cards
    def _card_action(self, kind: str, index: int) -> None:
        if kind == "edit":
            self.edit_requested.emit(index)
        elif kind == "copy":
            show_copied(self.card_actions)
        self.message_action.emit(kind, index)

    def hover(self, pos: QPoint) -> Card | None:
        """Show the actions of the card at viewport position ``pos``; that card."""
        return self.transcript.hover(pos)
