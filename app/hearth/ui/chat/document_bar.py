"""The chat's documents above the composer: one chip per document, and the Attach button.

A chip names the file and says where it stands: reading (pages done), indexing,
embedding, in the prompt whole, indexed with its passages, or why it was refused. Its
one button cancels while the file is read, and removes it from the chat after. The bar
hides while the chat has no document. ``ChatDocuments`` (``documents.py``) drives it;
this only draws.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QWidget

from hearth.ui.style.icons import icon
from hearth.ui.style.theme_hook import ThemeHook, app_tokens, set_sheet
from hearth.ui.style.tokens import SPACE, Tokens

log = logging.getLogger(__name__)

CHIP_NAME_CHARS = 32  # a longer file name is elided in the middle
ATTACH_TIP = "Attach documents (PDF, DOCX, Markdown, text, code, CSV, HTML)"


@dataclass(frozen=True)
class ChipState:
    """What a chip shows: ``status`` after the name; ``busy`` while it can be cancelled;
    ``error`` draws it in the danger colours."""

    status: str
    busy: bool = False
    error: bool = False


def short_name(name: str) -> str:
    if len(name) <= CHIP_NAME_CHARS:
        return name
    half = (CHIP_NAME_CHARS - 1) // 2
    return f"{name[:half]}…{name[-half:]}"


class DocumentChip(QFrame):
    """One document: its name, where it stands, and Cancel (busy) or Remove."""

    def __init__(self, key: int, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.key = key
        self.name = name
        self.state = ChipState("")
        self.setObjectName("documentChip")
        self.setToolTip(name)
        self.label = QLabel(self)
        self.label.setObjectName("documentChipText")
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.button = QToolButton(self)
        self.button.setObjectName("documentChipButton")
        self.button.setAutoRaise(True)
        self.button.setIconSize(QSize(14, 14))
        self.button.setCursor(Qt.CursorShape.PointingHandCursor)
        row = QHBoxLayout(self)
        row.setContentsMargins(SPACE["s"], 2, 2, 2)
        row.setSpacing(SPACE["xs"])
        row.addWidget(self.label)
        row.addWidget(self.button)
        self._hook = ThemeHook(self, self._restyle)
        self.set_state(ChipState("Waiting…", busy=True))

    def set_state(self, state: ChipState) -> None:
        restyle = state.error != self.state.error
        self.state = state
        self.label.setText(f"{short_name(self.name)} · {state.status}")
        action = "Cancel reading" if state.busy else "Remove from the chat"
        self.button.setToolTip(action)
        self.button.setAccessibleName(f"{action} {self.name}")
        self.setToolTip(f"{self.name}\n{state.status}")
        if restyle:
            self._restyle(app_tokens())  # an error's colours, in the current theme

    def _restyle(self, t: Tokens) -> None:
        error = self.state.error
        border = t.danger_border if error else t.border
        fill = t.danger_bg if error else t.surface_alt
        text = t.danger if error else t.text
        self.button.setIcon(icon("close", t, color=text))
        set_sheet(
            self,
            f"QFrame#documentChip {{ background: {fill}; border: 1px solid {border};"
            f" border-radius: 6px; }} QLabel#documentChipText {{ color: {text}; }}",
        )


class DocumentBar(QWidget):
    """The chips of the chat's documents; ``cancel_requested``/``remove_requested``
    carry a chip's key."""

    cancel_requested = Signal(int)
    remove_requested = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("documentBar")
        self.chips: dict[int, DocumentChip] = {}
        self._row = QHBoxLayout(self)
        self._row.setContentsMargins(SPACE["l"], SPACE["xs"], SPACE["l"], 0)
        self._row.setSpacing(SPACE["s"])
        self._row.addStretch(1)
        self.hide()

    def add(self, key: int, name: str, state: ChipState) -> DocumentChip:
        chip = DocumentChip(key, name, self)
        chip.set_state(state)
        chip.button.clicked.connect(lambda _c=False, k=key: self._clicked(k))
        self._row.insertWidget(self._row.count() - 1, chip)
        self.chips[key] = chip
        self.show()
        return chip

    def update_chip(self, key: int, state: ChipState) -> None:
        chip = self.chips.get(key)
        if chip is not None:
            chip.set_state(state)

    def remove(self, key: int) -> None:
        chip = self.chips.pop(key, None)
        if chip is not None:
            self._row.removeWidget(chip)
            chip.deleteLater()
        self.setVisible(bool(self.chips))

    def clear(self) -> None:
        for key in list(self.chips):
            self.remove(key)

    def _clicked(self, key: int) -> None:
        chip = self.chips.get(key)
        if chip is None:
            return
        if chip.state.busy:
            self.cancel_requested.emit(key)
        else:
            self.remove_requested.emit(key)


def attach_button(t: Tokens, parent: QWidget) -> QToolButton:
    """The composer's Attach button (a paperclip)."""
    button = QToolButton(parent)
    button.setObjectName("attachButton")
    button.setToolTip(ATTACH_TIP)
    button.setAccessibleName("Attach documents")
    button.setIcon(icon("attach", t))
    button.setIconSize(QSize(18, 18))
    button.setAutoRaise(True)
    button.setCursor(Qt.CursorShape.PointingHandCursor)
    return button
