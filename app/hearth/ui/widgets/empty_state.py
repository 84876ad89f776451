"""Empty states: what a page shows when it has nothing yet, with the next step.

A title, a line of explanation, and one or more *cards* (icon, title, text) that
are buttons: clicking one (or pressing Enter on it) runs its action. Every page that
can be empty (Chat with no model, Library, Downloads) shows one instead of a blank
table or transcript, so a first launch never dead-ends.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QSize, Qt, Signal
from PySide6.QtGui import QKeyEvent, QMouseEvent, QResizeEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from hearth.ui.style.icons import icon
from hearth.ui.style.theme import tokens_for
from hearth.ui.style.tokens import SPACE

log = logging.getLogger(__name__)

CARD_MIN_WIDTH = 170  # two cards still fit beside the chat list at 800 px
CARD_WIDTH = 250  # every card's width when there is room: a row of equal cards


@dataclass(frozen=True)
class CardSpec:
    name: str  # object name, for tests and the stylesheet
    icon: str  # a key of style.icons.NAMES
    title: str
    text: str
    action: Callable[[], object]


class Card(QFrame):
    """A clickable card; keyboard-focusable, activated with Enter or Space."""

    activated = Signal()

    def __init__(self, spec: CardSpec, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.spec = spec
        self.setObjectName(spec.name)
        self.setProperty("card", True)
        self.setAccessibleName(spec.title)
        self.setAccessibleDescription(spec.text)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMinimumWidth(CARD_MIN_WIDTH)
        self.setMaximumWidth(CARD_WIDTH)
        self.icon_label = QLabel(self)
        self.title_label = QLabel(spec.title, self)
        self.title_label.setProperty("role", "subtitle")
        self.title_label.setWordWrap(True)
        self.text_label = QLabel(spec.text, self)
        self.text_label.setProperty("role", "muted")
        self.text_label.setWordWrap(True)
        for label in (self.icon_label, self.title_label, self.text_label):
            label.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
            label.setStyleSheet("background: transparent; border: none;")
        col = QVBoxLayout(self)
        col.setContentsMargins(SPACE["l"], SPACE["l"], SPACE["l"], SPACE["l"])
        col.setSpacing(SPACE["s"])
        col.addWidget(self.icon_label)
        col.addWidget(self.title_label)
        col.addWidget(self.text_label)
        col.addStretch(1)
        self.activated.connect(spec.action)
        self.refresh_icon()

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        """The same width for every card, whatever its text: the row's layout then
        gives them equal widths (and shrinks them alike in a narrow window), and the
        row gives them one height."""
        return QSize(CARD_WIDTH, super().sizeHint().height())

    def refresh_icon(self) -> None:
        t = tokens_for(self.palette())
        self.icon_label.setPixmap(icon(self.spec.icon, t, color=t.accent).pixmap(QSize(28, 28)))

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:
            self.refresh_icon()  # icons are tinted for the theme
        super().changeEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        if event.button() == Qt.MouseButton.LeftButton and self.rect().contains(
            event.position().toPoint()
        ):
            self.activated.emit()
            event.accept()
            return
        super().mouseReleaseEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt override
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
            self.activated.emit()
            event.accept()
            return
        super().keyPressEvent(event)


class EmptyState(QWidget):
    """A centred title, a line of text and a row of cards."""

    def __init__(
        self,
        name: str,
        title: str,
        text: str,
        cards: list[CardSpec],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName(name)
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.title_label = QLabel(title, self)
        self.title_label.setProperty("role", "title")
        self.title_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.title_label.setWordWrap(True)
        self.text_label = QLabel(text, self)
        self.text_label.setProperty("role", "muted")
        self.text_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.text_label.setWordWrap(True)
        self.cards = [Card(spec, self) for spec in cards]
        self._row = row = QHBoxLayout()
        row.setSpacing(SPACE["m"])
        row.addStretch(1)
        for card in self.cards:
            row.addWidget(card)
        row.addStretch(1)
        self._col = col = QVBoxLayout(self)
        col.setContentsMargins(SPACE["m"], SPACE["xl"], SPACE["m"], SPACE["xl"])
        col.setSpacing(SPACE["m"])
        col.addStretch(2)
        col.addWidget(self.title_label)
        col.addWidget(self.text_label)
        col.addSpacing(SPACE["l"])
        col.addLayout(row)
        col.addStretch(3)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        """Cap every card at one whole-pixel width that fits the row: when the window
        is too narrow for ``CARD_WIDTH`` each, the layout would otherwise round the
        shrunk widths apart by a pixel."""
        super().resizeEvent(event)
        if not self.cards:
            return
        margins = self._col.contentsMargins()
        room = event.size().width() - margins.left() - margins.right()
        room -= self._row.spacing() * (len(self.cards) - 1)
        width = max(CARD_MIN_WIDTH, min(CARD_WIDTH, room // len(self.cards)))
        for card in self.cards:
            card.setMaximumWidth(width)

    def card(self, name: str) -> Card:
        for card in self.cards:
            if card.objectName() == name:
                return card
        raise KeyError(name)


def chat_empty_state(
    load: Callable[[], object], recommended: Callable[[], object], parent: QWidget
) -> EmptyState:
    """The Chat page with no model loaded: the two ways to get one."""
    return EmptyState(
        "chatEmptyState",
        "No model is loaded yet",
        "Hearth runs language models on this computer, privately. Pick one to start.",
        [
            CardSpec(
                "loadModelCard",
                "library",
                "Load a model you have",
                "Choose a model from your library or a GGUF file on this disk.",
                load,
            ),
            CardSpec(
                "recommendedCard",
                "recommended",
                "Get a recommended model",
                "Download a model picked for this computer's memory, then chat.",
                recommended,
            ),
        ],
        parent,
    )
