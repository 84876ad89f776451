"""The chat transcript: one document of message cards, drawn as the reply streams.

Kept apart from ``ChatView`` (the pane: composer, buttons, empty state, theme) because
this is the part that has to be fast. Streaming text is never painted per delta:
deltas are queued in a ``MarkdownWriter`` and a timer draws them at most every
``FLUSH_INTERVAL_MS`` (~60 fps). Each frame draws only what is new: finished markdown
blocks once, plus the still-growing tail. Cards (heading, body, hover actions) come
from ``message_card``; code blocks' Copy and Fold links are handled here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from PySide6.QtCore import QPoint, QRect, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import (
    QColor,
    QCursor,
    QDesktopServices,
    QFont,
    QGuiApplication,
    QPainter,
    QPaintEvent,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextFrame,
)
from PySide6.QtWidgets import QTextBrowser, QToolTip, QWidget

from hearth.chats import ToolCallRecord
from hearth.chats.attachments import PassageHit
from hearth.chats.images import ImageData
from hearth.ui.chat.image_view import IMAGE_SCHEME, ImageViewer, insert_images
from hearth.ui.chat.md_render import (
    COPY_SCHEME,
    FOLD_SCHEME,
    MarkdownWriter,
    prepare_document,
    toggle_fold,
)
from hearth.ui.chat.message_card import (
    CARD_SCHEME,
    Card,
    CardHover,
    CardIndex,
    CardMeta,
    MessageActions,
    add_avatars,
    draw_heading,
    draw_reasoning,
    open_bubble,
)
from hearth.ui.chat.sources import SOURCE_SCHEME, draw_sources, parse_source_link
from hearth.ui.chat.tool_fold import TOOL_SCHEME, draw_tool_calls, steps
from hearth.ui.style.tokens import TYPE, Tokens
from hearth.ui.widgets.copy_feedback import COPIED, COPIED_MS

log = logging.getLogger(__name__)

FLUSH_INTERVAL_MS = 16
# What an empty chat says (a model is loaded: the first-launch cards are ChatView's).
GREETING = "Ask anything"
GREETING_HINT = (
    "The model named at the top answers; Ctrl+L picks another. "
    "Chat settings hold the system prompt and sampling."
)


def show_copied(near: QWidget) -> None:
    """ "Copied" where the click was, for a moment: a Copy link or icon has no text of
    its own to change (see ``pages.copy_feedback`` for buttons)."""
    QToolTip.showText(QCursor.pos(), COPIED, near, QRect(), COPIED_MS)


class ChatTranscript(QTextBrowser):
    """The conversation's cards; ``busy()`` says whether the last one still streams
    (it gets no hover actions meanwhile)."""

    updated = Signal()
    """After each repaint (one per coalesced flush)."""
    card_action = Signal(str, int)
    """A card's action (copy, edit, regenerate, delete, prev, next, think, sources) and
    the message's index in the conversation."""
    source_requested = Signal(int, int)
    """A reply's source was clicked: (message index, passage index)."""
    tool_toggled = Signal(int, int)
    """A folded tool call was clicked: the message's index, the call's in the reply."""

    def __init__(self, tokens: Tokens, busy: Callable[[], bool], parent: QWidget) -> None:
        super().__init__(parent)
        self.tokens = tokens
        self.setObjectName("transcript")
        self.setAccessibleName("Conversation transcript")
        self.setOpenLinks(False)
        self.anchorClicked.connect(self._link_clicked)
        prepare_document(self.document(), tokens)
        add_avatars(self.document(), tokens)
        # An explicit minimum: the reading-width margins (see ChatView) must not raise
        # the transcript's minimum size (and with it the window's).
        self.setMinimumSize(240, 120)
        self.code_blocks: list[list[str]] = []
        self.code_headers: dict[int, int] = {}  # for folding long code blocks
        self.cards = CardIndex()
        self.card_actions = MessageActions(tokens, self.viewport())
        self.card_actions.triggered.connect(self.card_action.emit)
        self._hover = CardHover(self, self.cards, self.card_actions, busy)
        self.writer: MarkdownWriter | None = None
        self.images: dict[str, bytes] = {}  # shown images by sha256, for the viewer
        self.viewer: ImageViewer | None = None
        self.streamed_chars = 0
        self.flush_count = 0
        self._flush_timer = QTimer(self)
        self._flush_timer.setInterval(FLUSH_INTERVAL_MS)
        self._flush_timer.timeout.connect(self.flush)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        """An empty chat is not a blank page: a greeting and how to write, centred
        (painted only while the document is empty, so streaming never pays for it)."""
        super().paintEvent(event)
        if not self.document().isEmpty():
            return
        painter = QPainter(self.viewport())
        area = self.viewport().rect()
        title = QFont(self.font())
        title.setPointSizeF(TYPE["title"])
        title.setWeight(QFont.Weight.DemiBold)
        painter.setFont(title)
        painter.setPen(QColor(self.tokens.text))
        middle = area.center().y() - 24
        painter.drawText(
            QRect(area.left(), middle - 20, area.width(), 40),
            int(Qt.AlignmentFlag.AlignCenter),
            GREETING,
        )
        painter.setFont(self.font())
        painter.setPen(QColor(self.tokens.text_muted))
        painter.drawText(
            QRect(area.left(), middle + 20, area.width(), 40),
            int(
                Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop | Qt.TextFlag.TextWordWrap
            ),
            GREETING_HINT,
        )
        painter.end()

    def set_tokens(self, tokens: Tokens) -> None:
        """The theme changed: new colours for what is drawn from now on."""
        self.tokens = tokens
        prepare_document(self.document(), tokens)
        add_avatars(self.document(), tokens)
        self.card_actions.set_tokens(tokens)

    def set_streaming(self, streaming: bool) -> None:
        """Frames are drawn while a reply streams; at its end what is left is drawn."""
        if streaming:
            self._flush_timer.start()
        else:
            self._flush_timer.stop()
            self.flush()

    # ------------------------------------------------------------------ drawing
    def _end(self) -> QTextCursor:
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        return cursor

    def _following(self) -> bool:
        bar = self.verticalScrollBar()
        return bar.value() >= bar.maximum() - 4

    def _scroll_to_end(self) -> None:
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    def _card(
        self, role: str, index: int | None, meta: CardMeta, *, bubble: bool = False
    ) -> QTextFrame | None:
        """Start a card at the end: its heading, then the empty block its body goes in
        (inside the bubble's frame, returned, when ``bubble``)."""
        n = index if index is not None else len(self.cards)
        start = draw_heading(self._end(), self.tokens, role, n, meta)
        self.cards.add(Card(n, role, start))
        if bubble:
            return open_bubble(self._end(), self.tokens)
        self._end().insertBlock(QTextBlockFormat(), QTextCharFormat())
        return None

    def _new_writer(self, frame: QTextFrame | None = None) -> MarkdownWriter:
        """A writer for the message whose (empty) body block ends the document (or
        the bubble's ``frame``)."""
        return MarkdownWriter(
            self.document(),
            self.code_blocks,
            reuse_last_block=True,
            tokens=self.tokens,
            code_headers=self.code_headers,
            frame=frame,
        )

    def add_user_turn(
        self, text: str, index: int | None = None, images: Sequence[ImageData] = ()
    ) -> None:
        """The user's message, as markdown, in the bubble (its images above the text)."""
        follow = self._following()
        frame = self._card("user", index, CardMeta(), bubble=True)
        assert frame is not None
        if images:
            self.images.update(insert_images(frame.firstCursorPosition(), self.document(), images))
        self._new_writer(frame).set_text(text)
        if follow:
            self._scroll_to_end()
        self.updated.emit()

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
        start = 0
        for offset, calls in steps(meta.tools):  # the text before each step's calls
            if text[start:offset].strip():
                self._new_writer().set_text(text[start:offset])
            draw_tool_calls(
                self._end(), self.tokens, self.cards.last_index(), calls, meta.tools_open
            )
            start = offset
        writer = self._new_writer()
        writer.set_text(text[start:])
        if note:
            self._note(note, error=error, separate=bool(text))
        self.updated.emit()

    def begin_assistant_turn(self, index: int | None = None, meta: CardMeta | None = None) -> None:
        self.flush()
        self.streamed_chars = 0
        self._card("assistant", index, meta or CardMeta())  # the reply goes in its body
        self.writer = self._new_writer()
        self._scroll_to_end()
        self.updated.emit()

    def show_reasoning(self, meta: CardMeta) -> None:
        """The streaming reply finished thinking: its fold goes above the answer (call
        before the answer's first delta)."""
        if self.writer is None or self.streamed_chars or self.writer.has_pending:
            return
        draw_reasoning(self._end(), self.tokens, self.cards.last_index(), meta)
        self.updated.emit()

    def show_tool_calls(self, calls: list[tuple[int, ToolCallRecord]]) -> None:
        """The streaming reply's calls of one step, folded after its text so far; the
        reply's next step goes on below them."""
        if self.writer is None:
            return
        self.writer.finish()
        follow = self._following()
        draw_tool_calls(self._end(), self.tokens, self.cards.last_index(), calls, frozenset())
        self.writer = self._new_writer()
        if follow:
            self._scroll_to_end()
        self.updated.emit()

    def append_delta(self, text: str) -> None:
        """Queue streamed text; it appears at the next flush (≤ ~16 ms)."""
        if self.writer is None:
            self.begin_assistant_turn()
        assert self.writer is not None
        self.writer.append(text)
        self.streamed_chars += len(text)
        if not self._flush_timer.isActive():
            self._flush_timer.start()

    def flush(self) -> None:
        writer = self.writer
        if writer is None or not writer.has_pending:
            return
        follow = self._following()
        writer.render()
        if follow:
            self._scroll_to_end()
        self.flush_count += 1
        self.updated.emit()

    def end_assistant_turn(self, note: str | None = None, *, error: bool = False) -> None:
        """Close the reply; ``note`` (e.g. "stopped" or an error) is shown after it."""
        follow = self._following()
        if self.writer is not None:
            self.writer.finish()
            self.writer = None
        if note:
            self._note(note, error=error, separate=self.streamed_chars > 0)
        if follow:
            self._scroll_to_end()
        self.updated.emit()

    def add_sources(self, index: int, sources: Sequence[PassageHit], open_: bool) -> None:
        """The fold of the passages reply ``index`` was given, after its text."""
        follow = self._following()
        draw_sources(self._end(), self.tokens, index, sources, open_)
        if follow:
            self._scroll_to_end()
        self.updated.emit()

    def _note(self, note: str, *, error: bool, separate: bool) -> None:
        fmt = QTextCharFormat()
        fmt.setForeground(QColor(self.tokens.danger if error else self.tokens.text_muted))
        fmt.setFontItalic(True)
        cursor = self._end()
        if separate and cursor.block().length() > 1:
            cursor.insertBlock(QTextBlockFormat(), fmt)
        cursor.insertText(f"[{note}]", fmt)

    def reset(self) -> None:
        """Empty: no cards, no code blocks, no reply in progress."""
        self.writer = None
        self.code_blocks.clear()
        self.code_headers.clear()
        self.cards.clear()
        self.images.clear()
        self.card_actions.hide()
        self.clear()
        add_avatars(self.document(), self.tokens)  # clear() dropped the images

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
        lines = len(self.code_blocks[index])
        folded = toggle_fold(self.document(), self.code_headers[index], lines)
        self.viewport().update()
        return folded

    def _link_clicked(self, url: QUrl) -> None:
        href = url.toString()
        if href.startswith(COPY_SCHEME):
            self.copy_code(int(href[len(COPY_SCHEME) :]))
            show_copied(self.viewport())
        elif href.startswith(FOLD_SCHEME):
            self.fold_code(int(href[len(FOLD_SCHEME) :]))
        elif href.startswith(IMAGE_SCHEME):
            self.show_image(href[len(IMAGE_SCHEME) :])
        elif href.startswith(TOOL_SCHEME):
            message, _, call = href[len(TOOL_SCHEME) :].partition(":")
            self.tool_toggled.emit(int(message), int(call))
        elif href.startswith(CARD_SCHEME):
            kind, _, index = href[len(CARD_SCHEME) :].partition(":")
            self.card_action.emit(kind, int(index))
        elif href.startswith(SOURCE_SCHEME):
            where = parse_source_link(href)
            if where is not None:
                self.source_requested.emit(*where)
        elif url.scheme() in ("http", "https"):
            QDesktopServices.openUrl(url)
        else:
            log.info("ignored link %s", href)

    def show_image(self, sha256: str) -> ImageViewer | None:
        """Open a shown image at full size (a click on its thumbnail)."""
        data = self.images.get(sha256)
        if data is None:
            return None
        self.viewer = ImageViewer(data, self)
        self.viewer.show()
        return self.viewer

    def hover(self, pos: QPoint) -> Card | None:
        """Show the actions of the card at viewport position ``pos``; that card."""
        return self._hover.hover(pos)
