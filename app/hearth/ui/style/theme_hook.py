"""Re-styling a widget when the theme switches, at most once per theme.

A widget whose colours come from its own style sheet (a chip, a coloured note) keeps
the old theme's colours after a switch unless it repaints them; Qt tells it with a
palette change, which re-polishing sends again. ``ThemeHook`` is the one way widgets
listen for that, instead of each overriding ``changeEvent``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget

from hearth.ui.style.theme import tokens_for
from hearth.ui.style.tokens import Tokens

log = logging.getLogger(__name__)


def app_tokens() -> Tokens:
    """The theme the app is painted in (the app's palette: a widget with its own
    style sheet may carry a palette of its fill)."""
    return tokens_for(QGuiApplication.palette())


def set_sheet(widget: QWidget, sheet: str) -> None:
    """Set ``widget``'s style sheet only when it changes: re-polishing sends another
    palette change, which would restyle again."""
    if sheet != widget.styleSheet():
        widget.setStyleSheet(sheet)


class ThemeHook(QObject):
    """Calls ``apply(tokens)`` now and whenever ``widget``'s palette changes (the theme
    switched), at most once per theme."""

    def __init__(self, widget: QWidget, apply: Callable[[Tokens], None]) -> None:
        super().__init__(widget)
        self._apply = apply
        self._tokens: Tokens | None = None
        widget.installEventFilter(self)
        self.refresh()

    def refresh(self) -> None:
        t = app_tokens()
        if t is not self._tokens:
            self._tokens = t
            self._apply(t)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:
            self.refresh()
        return False
