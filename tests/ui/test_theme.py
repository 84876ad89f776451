"""The theme (ui/style/theme.py) is app-wide and complete: palette and stylesheet both
come from the tokens, "system" follows the desktop, and clearing it (what conftest's
``default_theme`` does between tests) really gives Qt's own look back."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QWidget
from pytestqt.qtbot import QtBot

from hearth.ui.style.qss import stylesheet
from hearth.ui.style.theme import (
    THEME_PROPERTY,
    SystemThemeFollower,
    apply_theme,
    clear_theme,
    resolve,
    tokens_for,
)
from hearth.ui.style.tokens import DARK, LIGHT, Tokens

pytestmark = pytest.mark.ui


def _color(widget: QWidget, role: QPalette.ColorRole) -> str:
    return widget.palette().color(role).name()


def _apply(qapp: QApplication, theme: str) -> None:
    apply_theme(theme)
    qapp.processEvents()  # widgets hear of the new palette through posted events


def _assert_painted_with(widget: QWidget, t: Tokens) -> None:
    assert _color(widget, QPalette.ColorRole.Window) == t.window
    assert _color(widget, QPalette.ColorRole.Base) == t.surface
    assert _color(widget, QPalette.ColorRole.Text) == t.text
    assert _color(widget, QPalette.ColorRole.Link) == t.accent
    assert tokens_for(widget.palette()) is t


def test_light_dark_and_system_reach_every_widget(qtbot: QtBot, qapp: QApplication) -> None:
    widget = QWidget()
    qtbot.addWidget(widget)
    for theme, tokens in (("dark", DARK), ("light", LIGHT), ("dark", DARK)):
        _apply(qapp, theme)
        _assert_painted_with(widget, tokens)  # existing windows follow
        later = QWidget()
        qtbot.addWidget(later)
        _assert_painted_with(later, tokens)  # and new ones
        assert qapp.styleSheet() == stylesheet(tokens)
        assert tokens.window in qapp.styleSheet() and tokens.accent_fill in qapp.styleSheet()
    _apply(qapp, "system")  # offscreen, the desktop's scheme is unknown: light
    assert qapp.property(THEME_PROPERTY) == "system"
    _assert_painted_with(widget, resolve("system"))


def test_system_follows_the_desktop_only_when_chosen(qtbot: QtBot, qapp: QApplication) -> None:
    widget = QWidget()
    qtbot.addWidget(widget)
    follower = SystemThemeFollower(qapp)
    try:
        _apply(qapp, "system")
        follower.scheme_changed(Qt.ColorScheme.Dark)
        qapp.processEvents()
        _assert_painted_with(widget, DARK)
        follower.scheme_changed(Qt.ColorScheme.Light)
        qapp.processEvents()
        _assert_painted_with(widget, LIGHT)
        _apply(qapp, "light")  # an explicit choice is kept when the desktop switches
        follower.scheme_changed(Qt.ColorScheme.Dark)
        qapp.processEvents()
        _assert_painted_with(widget, LIGHT)
    finally:
        follower.deleteLater()


def test_clearing_the_theme_gives_qt_its_own_look_back(qtbot: QtBot, qapp: QApplication) -> None:
    widget = QWidget()
    qtbot.addWidget(widget)
    default = _color(widget, QPalette.ColorRole.Window)
    assert default != DARK.window
    _apply(qapp, "dark")
    assert _color(widget, QPalette.ColorRole.Window) == DARK.window  # it did change
    assert qapp.palette().resolveMask() != 0 and qapp.styleSheet()
    clear_theme()
    qapp.processEvents()
    assert _color(widget, QPalette.ColorRole.Window) == default
    assert qapp.palette().resolveMask() == 0  # nothing set over the platform's palette
    assert qapp.styleSheet() == ""
    assert qapp.property(THEME_PROPERTY) is None
