"""The app's QStyle: Fusion, plus the one thing the stylesheet cannot say.

Once the stylesheet frames a spin box (``qss.py``), Qt places its text field flush
against the left border and ignores ``padding-left`` on the spin box and every rule on
its embedded QLineEdit, so left-aligned numbers touch the frame. The style's
``polish`` (called once per widget, also when the stylesheet changes) gives that
line edit a text margin while the app's stylesheet is set, and takes it away when
it is cleared, so Qt's own look stays Qt's own.
"""

from __future__ import annotations

import logging
from typing import Any

from PySide6.QtWidgets import QAbstractSpinBox, QApplication, QProxyStyle

from hearth.ui.style.tokens import SPACE

log = logging.getLogger(__name__)

MARKER = "hearthInputStyle"  # a dynamic property on the QApplication
SPIN_TEXT_MARGIN = SPACE["xs"]  # left of a framed spin box's text, like QLineEdit's padding


class InputStyle(QProxyStyle):
    """Fusion (or ``base``), with framed spin boxes' text kept off their border."""

    def __init__(self, base: str = "Fusion") -> None:
        super().__init__(base)

    def polish(self, target: Any) -> Any:  # QWidget, QApplication or QPalette
        result = super().polish(target)
        if isinstance(target, QAbstractSpinBox):
            _set_text_margin(target)
        return result


def _set_text_margin(spin: QAbstractSpinBox) -> None:
    edit = spin.lineEdit()
    if edit is None:
        return
    app = QApplication.instance()
    styled = isinstance(app, QApplication) and bool(app.styleSheet())
    left = SPIN_TEXT_MARGIN if styled and spin.hasFrame() else 0
    margins = edit.textMargins()
    if margins.left() != left:
        edit.setTextMargins(left, margins.top(), margins.right(), margins.bottom())


def ensure_input_style(app: QApplication) -> None:
    """Make ``app``'s style an InputStyle over the style it has now (Fusion in the app).

    Once: with a stylesheet set ``app.style()`` is Qt's stylesheet wrapper, so the
    app carries a marker property instead of being asked what its style is.
    """
    if app.property(MARKER):
        return
    current = app.style()
    name = (current.name() if current is not None else "") or "Fusion"
    app.setStyle(InputStyle(name))
    app.setProperty(MARKER, True)
    log.debug("app style: InputStyle over %s", name)
