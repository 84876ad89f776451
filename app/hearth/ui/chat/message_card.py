"""Message cards in the transcript: a heading per message, the user's tinted bubble,
reasoning folded above a reply, and the actions shown on hover.

The transcript stays one ``QTextBrowser`` (streaming draws only the new tail, see
``md_render``), so a card is a run of blocks: a heading line (an icon and who wrote
it: "You", or the model's name; the "< 2/3 >" variant switcher), then the message; the
user's message sits in a tinted frame (a frame's padding is shaded, a block's margins
are not). ``CardIndex``
remembers where each card starts, so a mouse position maps to a message, and
``MessageActions`` (Copy, Edit, Regenerate, Delete) floats over the hovered card.
"""

from __future__ import annotations

import bisect
import html
import logging
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, QPoint, QSize, Qt, QUrl, Signal
from PySide6.QtGui import (
    QColor,
    QCursor,
    QFont,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFrame,
    QTextFrameFormat,
    QTextImageFormat,
)
from PySide6.QtWidgets import QFrame, QHBoxLayout, QTextBrowser, QToolButton, QWidget

from hearth.chats import ToolCallRecord
from hearth.ui.style.icons import icon
from hearth.ui.style.tokens import SPACE, Tokens

log = logging.getLogger(__name__)

CARD_SCHEME = "msg:"  # msg:prev:N, msg:next:N (variants), msg:think:N (fold)
PREV, NEXT = "\u2039", "\u203a"  # the variant switcher's arrows
CARD_GAP = 18  # px above each card
BUBBLE_PADDING = 10  # px of tint around the user's text
AVATAR = 16  # px: the icon before a card's author
AVATARS = {"user": ("account", "hearth-card:user"), "assistant": ("model", "hearth-card:model")}
ACTIONS = ("copy", "edit", "regenerate", "delete")
ACTION_TIPS = {
    "copy": "Copy the message",
    "edit": "Edit and resend",
    "regenerate": "Write this reply again (the others are kept)",
    "delete": "Delete the message",
}


@dataclass(frozen=True)
class CardMeta:
    """What a reply's heading shows besides the text."""

    model: str | None = None
    variant: tuple[int, int] = (0, 1)  # (index, count) among regenerations
    reasoning: str = ""
    reasoning_s: float | None = None
    reasoning_open: bool = False
    tools: tuple[ToolCallRecord, ...] = ()  # the reply's tool calls, folded in its text
    tools_open: frozenset[int] = frozenset()  # which of them are opened


@dataclass(frozen=True)
class Card:
    index: int  # the message's place in the conversation
    role: str
    start: int  # document position where its heading begins


class CardIndex:
    """Where each card starts in the document; appended in order, so bisectable."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._cards: list[Card] = []

    def clear(self) -> None:
        self._starts.clear()
        self._cards.clear()

    def add(self, card: Card) -> None:
        self._starts.append(card.start)
        self._cards.append(card)

    def at(self, position: int) -> Card | None:
        """The card that holds document ``position`` (None before the first)."""
        i = bisect.bisect_right(self._starts, position) - 1
        return self._cards[i] if i >= 0 else None

    def __len__(self) -> int:
        return len(self._cards)

    def last(self) -> Card | None:
        return self._cards[-1] if self._cards else None

    def last_index(self) -> int:
        return self._cards[-1].index if self._cards else 0


def _char(t: Tokens, *, bold: bool = False, muted: bool = False) -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setForeground(QColor(t.text_muted if muted else t.text))
    if bold:
        fmt.setFontWeight(QFont.Weight.Bold)
    return fmt


def _link(t: Tokens, href: str) -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setAnchor(True)
    fmt.setAnchorHref(href)
    fmt.setForeground(QColor(t.accent))
    return fmt


def add_avatars(doc: QTextDocument, t: Tokens) -> None:
    """The authors' icons as the document's images, in the theme's colours (again on a
    theme change: the same names, so cards drawn later pick up the new ones)."""
    for kind, name in AVATARS.values():
        pixmap = icon(kind, t, color=t.text_muted).pixmap(QSize(AVATAR, AVATAR))
        doc.addResource(QTextDocument.ResourceType.ImageResource.value, QUrl(name), pixmap)


def draw_heading(cursor: QTextCursor, t: Tokens, role: str, index: int, meta: CardMeta) -> int:
    """The card's first line at ``cursor`` (the document's end): an icon and who wrote
    it (you, or the model by name), and the variants. Returns where it starts.

    An empty last block (a new document, or the one Qt keeps after a bubble's frame)
    becomes the heading, rather than a blank line above it."""
    block = QTextBlockFormat()
    block.setTopMargin(CARD_GAP)
    block.setBottomMargin(2)
    if cursor.block().length() == 1:
        cursor.setBlockFormat(block)
        cursor.setBlockCharFormat(QTextCharFormat())
    else:
        cursor.insertBlock(block, QTextCharFormat())
    start = cursor.block().position()
    image = QTextImageFormat()
    image.setName(AVATARS.get(role, AVATARS["assistant"])[1])
    image.setWidth(AVATAR)
    image.setHeight(AVATAR)
    image.setVerticalAlignment(QTextCharFormat.VerticalAlignment.AlignMiddle)
    cursor.insertImage(image)
    cursor.insertText("  ", QTextCharFormat())
    who = "You" if role == "user" else (meta.model or "Assistant")
    cursor.insertText(who, _char(t, bold=True))
    at, count = meta.variant
    if role == "assistant" and count > 1:
        cursor.insertText("    ", QTextCharFormat())
        if at > 0:
            cursor.insertText(PREV, _link(t, f"{CARD_SCHEME}prev:{index}"))
        else:
            cursor.insertText(PREV, _char(t, muted=True))
        cursor.insertText(f" {at + 1}/{count} ", _char(t, muted=True))
        if at < count - 1:
            cursor.insertText(NEXT, _link(t, f"{CARD_SCHEME}next:{index}"))
        else:
            cursor.insertText(NEXT, _char(t, muted=True))
    return start


def thought_label(seconds: float | None) -> str:
    if seconds is None:
        return "Thoughts"
    whole = max(1, round(seconds))
    return f"Thought for {whole} s"


def draw_reasoning(cursor: QTextCursor, t: Tokens, index: int, meta: CardMeta) -> None:
    """The fold above a reply: "▸ Thought for N s" (a link), and the text when open.

    ``cursor`` is in the card's empty body block; an empty block follows for the reply.
    """
    arrow = "▾" if meta.reasoning_open else "▸"
    fmt = _link(t, f"{CARD_SCHEME}think:{index}")
    cursor.insertText(f"{arrow} {thought_label(meta.reasoning_s)}", fmt)
    body = QTextBlockFormat()
    body.setLeftMargin(14)
    text = QTextCharFormat()
    text.setForeground(QColor(t.quote_text))
    text.setFontItalic(True)
    if meta.reasoning_open:
        for line in meta.reasoning.strip().splitlines() or [""]:
            cursor.insertBlock(body, text)
            cursor.insertText(line, text)
    cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())


def open_bubble(cursor: QTextCursor, t: Tokens) -> QTextFrame:
    """The user's bubble at ``cursor`` (the document's end): a tinted frame with room
    around the text; the message is drawn inside it (``MarkdownWriter(frame=...)``).
    Its first block is empty, for the message to reuse."""
    fmt = QTextFrameFormat()
    fmt.setBackground(QColor(t.surface_alt))
    fmt.setBorder(0)
    fmt.setPadding(BUBBLE_PADDING)
    fmt.setTopMargin(SPACE["xs"])
    fmt.setBottomMargin(CARD_GAP)  # Qt lays the next heading's top margin out as none
    return cursor.insertFrame(fmt)


def plain_text(text: str) -> str:
    """Escaped text with line breaks kept (a note, a user message in plain mode)."""
    return html.escape(text).replace("\n", "<br>")


class MessageActions(QFrame):
    """The hover toolbar of a card: Copy, Edit (yours), Regenerate (replies), Delete."""

    triggered = Signal(str, int)
    """(action, message index) when one of the buttons is clicked."""

    def __init__(self, tokens: Tokens, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("messageActions")
        self.card: Card | None = None
        self.buttons: dict[str, QToolButton] = {}
        row = QHBoxLayout(self)
        row.setContentsMargins(2, 2, 2, 2)
        row.setSpacing(0)
        for kind in ACTIONS:
            button = QToolButton(self)
            button.setObjectName(f"{kind}MessageButton")
            button.setToolTip(ACTION_TIPS[kind])
            button.setAccessibleName(kind.capitalize())
            button.setIconSize(QSize(16, 16))
            button.setAutoRaise(True)
            button.setCursor(Qt.CursorShape.PointingHandCursor)
            button.clicked.connect(lambda _c=False, k=kind: self._clicked(k))
            row.addWidget(button)
            self.buttons[kind] = button
        self.set_tokens(tokens)
        self.hide()

    def set_tokens(self, t: Tokens) -> None:
        self.setStyleSheet(
            f"QFrame#messageActions {{ background: {t.surface}; border: 1px solid {t.border};"
            f" border-radius: 6px; }}"
            f" QToolButton:hover {{ background: {t.surface_alt}; }}"
        )
        for kind, button in self.buttons.items():
            button.setIcon(icon(kind, t, color=t.text_muted))

    def show_for(self, card: Card, top: int, right: int) -> None:
        """Float over ``card``, its top-right corner at (``right``, ``top``)."""
        self.card = card
        self.buttons["edit"].setVisible(card.role == "user")
        self.buttons["regenerate"].setVisible(card.role == "assistant")
        self.adjustSize()
        self.move(max(0, right - self.width()), max(0, top))
        self.show()
        self.raise_()

    def _clicked(self, kind: str) -> None:
        if self.card is not None:
            self.triggered.emit(kind, self.card.index)


class CardHover(QObject):
    """Floats ``actions`` over the card under the mouse in ``transcript``.

    The card still streaming (while ``busy()``) gets none."""

    def __init__(
        self,
        transcript: QTextBrowser,
        cards: CardIndex,
        actions: MessageActions,
        busy: Callable[[], bool],
    ) -> None:
        super().__init__(transcript)
        self.transcript, self.cards, self.actions, self._busy = transcript, cards, actions, busy
        self._viewport = viewport = transcript.viewport()
        viewport.setMouseTracking(True)
        viewport.installEventFilter(self)
        transcript.verticalScrollBar().valueChanged.connect(actions.hide)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        # The event's type first: while the transcript is torn down its viewport still
        # gets events, and the transcript must not be touched then.
        kind = event.type()
        if kind not in (QEvent.Type.MouseMove, QEvent.Type.Leave) or watched is not self._viewport:
            return False
        pos = self._viewport.mapFromGlobal(QCursor.pos())
        if kind == QEvent.Type.MouseMove:
            self.hover(pos)
        elif not self.actions.geometry().contains(pos):
            self.actions.hide()
        return False

    def hover(self, pos: QPoint) -> Card | None:
        card = self.cards.at(self.transcript.cursorForPosition(pos).position())
        streaming = self._busy() and card is self.cards.last()
        if card is None or streaming:
            self.actions.hide()
            return None
        # Level with the heading's line (where its text really is: a heading after a
        # frame gets no top margin), at the column's right edge.
        heading = QTextCursor(self.transcript.document())
        heading.setPosition(card.start)
        line = self.transcript.cursorRect(heading)
        self.actions.adjustSize()
        top = line.center().y() - self.actions.height() // 2
        self.actions.show_for(card, top, self.transcript.viewport().width() - 4)
        return card
