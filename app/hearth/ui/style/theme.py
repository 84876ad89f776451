"""Applying a theme app-wide: the palette and the stylesheet, both from the tokens.

"system" follows the desktop's colour scheme (``QStyleHints.colorScheme``), also
when it changes while the app runs (``SystemThemeFollower``). The choice is kept on
the QApplication itself (a dynamic property), so there is no module state: a widget
that needs colours outside the stylesheet (the transcript's markdown) asks
``tokens_for(widget.palette())`` which theme it is painted in.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from hearth.ui.style.input_style import ensure_input_style
from hearth.ui.style.qss import stylesheet
from hearth.ui.style.tokens import DARK, LIGHT, Tokens

log = logging.getLogger(__name__)

THEMES = ("system", "light", "dark")
THEME_PROPERTY = "hearthTheme"


def system_scheme() -> Qt.ColorScheme:
    hints = QGuiApplication.styleHints()
    return hints.colorScheme() if hints is not None else Qt.ColorScheme.Unknown


def resolve(theme: str, scheme: Qt.ColorScheme | None = None) -> Tokens:
    """The tokens for "light", "dark" or "system" (the desktop's ``scheme``, by default
    the current one; light when it is unknown)."""
    if theme == "dark":
        return DARK
    if theme == "light":
        return LIGHT
    scheme = system_scheme() if scheme is None else scheme
    return DARK if scheme == Qt.ColorScheme.Dark else LIGHT


def tokens_for(palette: QPalette) -> Tokens:
    """Which theme a palette belongs to (dark when its window colour is dark)."""
    return DARK if palette.color(QPalette.ColorRole.Window).lightness() < 128 else LIGHT


def palette_for(t: Tokens) -> QPalette:
    roles = {
        QPalette.ColorRole.Window: t.window,
        QPalette.ColorRole.WindowText: t.text,
        QPalette.ColorRole.Base: t.surface,
        QPalette.ColorRole.AlternateBase: t.surface_alt,
        QPalette.ColorRole.ToolTipBase: t.surface,
        QPalette.ColorRole.ToolTipText: t.text,
        QPalette.ColorRole.Text: t.text,
        QPalette.ColorRole.Button: t.surface,
        QPalette.ColorRole.ButtonText: t.text,
        QPalette.ColorRole.BrightText: t.danger,
        QPalette.ColorRole.Highlight: t.selection,
        QPalette.ColorRole.HighlightedText: t.on_selection,
        QPalette.ColorRole.Link: t.accent,
        QPalette.ColorRole.LinkVisited: t.accent,
        QPalette.ColorRole.PlaceholderText: t.text_muted,
        QPalette.ColorRole.Mid: t.border,
        QPalette.ColorRole.Midlight: t.surface_alt,
        QPalette.ColorRole.Light: t.surface,
        QPalette.ColorRole.Dark: t.border,
        QPalette.ColorRole.Shadow: t.rail,
    }
    palette = QPalette()
    for role, color in roles.items():
        palette.setColor(role, QColor(color))
    for role in (
        QPalette.ColorRole.Text,
        QPalette.ColorRole.ButtonText,
        QPalette.ColorRole.WindowText,
    ):
        palette.setColor(QPalette.ColorGroup.Disabled, role, QColor(t.disabled_text))
    return palette


def apply_theme(theme: str, scheme: Qt.ColorScheme | None = None) -> Tokens:
    """Apply "light", "dark" or "system" to the whole application; the tokens used.

    App-wide rather than per window: dialogs, menus and tooltips must follow it too.
    """
    t = resolve(theme, scheme)
    app = QApplication.instance()
    if not isinstance(app, QApplication):
        return t
    app.setProperty(THEME_PROPERTY, theme)
    ensure_input_style(app)  # before the sheet, so its re-polish reaches our style
    app.setPalette(palette_for(t))
    app.setStyleSheet(stylesheet(t))
    log.debug("theme %s (%s)", theme, t.name)
    return t


def clear_theme() -> None:
    """Back to Qt's own look (no palette or stylesheet of ours): tests start from it."""
    app = QApplication.instance()
    if not isinstance(app, QApplication):
        return
    app.setProperty(THEME_PROPERTY, None)
    if app.styleSheet():
        app.setStyleSheet("")
    if app.palette().resolveMask() != 0:
        app.setPalette(QPalette())


class SystemThemeFollower(QObject):
    """Re-applies "system" when the desktop switches between light and dark."""

    def __init__(self, app: QApplication) -> None:
        super().__init__(app)
        self._app = app
        hints = QGuiApplication.styleHints()
        if hints is not None:
            hints.colorSchemeChanged.connect(self.scheme_changed)

    def scheme_changed(self, scheme: Qt.ColorScheme) -> None:
        """The desktop's scheme is now ``scheme``: follow it if the theme is "system"."""
        if self._app.property(THEME_PROPERTY) == "system":
            apply_theme("system", scheme)
