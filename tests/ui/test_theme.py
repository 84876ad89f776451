"""The theme is app-wide (dialogs, menus and tooltips follow it), so a test that picks
one must not leave it for the next: conftest's ``default_theme`` resets it. The second
test here runs after the first and checks exactly that."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QWidget
from pytestqt.qtbot import QtBot

from hearth.ui.app_settings import apply_theme, theme_palette

pytestmark = pytest.mark.ui

DARK_WINDOW = "#2b2b2b"


def _window_color(widget: QWidget) -> str:
    return widget.palette().color(QPalette.ColorRole.Window).name()


def _apply(qapp: QApplication, theme: str) -> None:
    apply_theme(theme)
    qapp.processEvents()  # widgets hear of the new palette through posted events


def test_dark_then_system(qtbot: QtBot, qapp: QApplication) -> None:
    widget = QWidget()
    qtbot.addWidget(widget)
    default = _window_color(widget)
    _apply(qapp, "dark")
    assert _window_color(widget) == DARK_WINDOW  # existing windows follow
    later = QWidget()
    qtbot.addWidget(later)
    assert _window_color(later) == DARK_WINDOW  # and new ones
    _apply(qapp, "light")
    palette = theme_palette("light")
    assert palette is not None
    assert _window_color(widget) == palette.color(QPalette.ColorRole.Window).name()
    _apply(qapp, "system")
    assert _window_color(widget) == default
    _apply(qapp, "dark")  # left dark on purpose: the next test must not see it


def test_the_next_test_starts_from_the_default_theme(qtbot: QtBot, qapp: QApplication) -> None:
    widget = QWidget()
    qtbot.addWidget(widget)
    assert _window_color(widget) != DARK_WINDOW
    assert qapp.palette().resolveMask() == 0  # nothing set over the platform's palette
    assert qapp.styleSheet() == ""
