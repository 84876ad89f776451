"""Small shared pieces of the pages: table button helpers, an error in a sentence
(numbers: hearth.core.units)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

from hearth.core.errors import HearthError
from hearth.ui.style.tokens import SPACE


def button(
    text: str, accessible: str, slot: Callable[[], object], parent: QWidget | None = None
) -> QPushButton:
    """A push button with an accessible name whose click calls ``slot()``."""
    btn = QPushButton(text, parent)
    btn.setAccessibleName(accessible)
    btn.clicked.connect(lambda _checked=False: slot())
    return btn


def button_cell(*buttons: QPushButton) -> QWidget:
    """A compact widget holding ``buttons`` side by side, for a table cell (of a
    ``page_style.style_table`` table, whose item padding insets it)."""
    cell = QWidget()
    row = QHBoxLayout(cell)
    row.setContentsMargins(0, 0, 0, 0)
    row.setSpacing(SPACE["xs"])
    for btn in buttons:
        row.addWidget(btn)
    return cell


def plural(n: int, noun: str) -> str:
    """ "1 model", "3 models", "1,024 downloads" (regular English plurals only)."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def error_text(exc: BaseException) -> str:
    """What a status line says of a failure: a ``HearthError`` is already a sentence
    for the user; anything else is unexpected, and says so."""
    return exc.message if isinstance(exc, HearthError) else f"Something went wrong: {exc}"
