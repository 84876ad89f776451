"""Spin and combo boxes show their frame and their arrows in both themes, anywhere.

Fusion draws these frames from the window colour, which in the dark theme left them
almost invisible outside Settings' cards; the stylesheet now frames them like line
edits, and since a styled border makes Qt draw the arrows from the stylesheet too,
their arrows come from rendered PNGs (``ui/style/arrows.py``). Checked on real
pixels: the painted frame against the painted window (WCAG non-text contrast, 3:1, the
standard for component boundaries), arrow pixels inside the button areas, and clicks
on those areas doing what they should.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor, QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QDoubleSpinBox,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)
from pytestqt.qtbot import QtBot

from hearth.ui.style.qss import BUTTON_W
from hearth.ui.style.theme import apply_theme
from hearth.ui.style.tokens import DARK, LIGHT, Tokens, contrast_ratio

pytestmark = pytest.mark.ui

NON_TEXT = 3.0


def _hex(image: QImage, x: int, y: int) -> str:
    return QColor(image.pixel(x, y)).name()


def _arrow_pixels(image: QImage, left: int, right: int, top: int, bottom: int, t: Tokens) -> int:
    """Pixels in the box that stand out from the field's surface as text and arrows do."""
    count = 0
    for x in range(left, right):
        for y in range(top, bottom):
            if contrast_ratio(_hex(image, x, y), t.surface) >= NON_TEXT:
                count += 1
    return count


@pytest.mark.parametrize("t", [DARK, LIGHT], ids=["dark", "light"])
def test_frames_and_arrows_are_painted(qtbot: QtBot, qapp: QApplication, t: Tokens) -> None:
    apply_theme(t.name)
    host = QWidget()
    qtbot.addWidget(host)
    layout = QVBoxLayout(host)
    layout.setContentsMargins(10, 10, 10, 10)
    spin, double, combo = QSpinBox(), QDoubleSpinBox(), QComboBox()
    spin.setRange(0, 10)
    spin.setValue(8)
    double.setValue(0.7)
    combo.addItems(["alpha", "beta"])
    for widget in (spin, double, combo):
        widget.setFixedWidth(200)
        layout.addWidget(widget)
    host.resize(240, 160)
    qapp.processEvents()
    image = host.grab().toImage()
    window = _hex(image, 2, 2)
    assert window == t.window
    for widget in (spin, double, combo):
        g = widget.geometry()
        mid = g.center().y()
        frame = _hex(image, g.left(), mid)
        ratio = contrast_ratio(frame, window)
        name = type(widget).__name__
        assert ratio >= NON_TEXT, f"{t.name} {name} frame {frame} on {window}: {ratio:.2f}"
        buttons = _arrow_pixels(
            image, g.right() - BUTTON_W + 1, g.right(), g.top() + 2, g.bottom() - 1, t
        )
        assert buttons >= 4, f"{t.name} {name}: no arrow drawn ({buttons} pixels)"
    # Qt puts a framed spin box's text flush on its border; the app's style moves it off
    g = spin.geometry()
    ink = [
        x
        for x in range(g.left() + 1, g.left() + 40)
        if _arrow_pixels(image, x, x + 1, g.top() + 2, g.bottom() - 1, t)
    ]
    assert ink and ink[0] >= g.left() + 5, f"{t.name}: spin text starts at {ink[:1]}"


@pytest.mark.parametrize("t", [DARK, LIGHT], ids=["dark", "light"])
def test_arrows_work_where_they_are_drawn(qtbot: QtBot, qapp: QApplication, t: Tokens) -> None:
    apply_theme(t.name)
    spin = QSpinBox()
    spin.setRange(0, 10)
    spin.setValue(5)
    spin.resize(160, spin.sizeHint().height())
    qtbot.addWidget(spin)
    spin.show()
    qtbot.waitExposed(spin)
    x = spin.width() - BUTTON_W // 2
    QTest.mouseClick(
        spin,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
        QPoint(x, spin.height() // 4),
    )
    assert spin.value() == 6
    QTest.mouseClick(
        spin,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
        QPoint(x, spin.height() * 3 // 4),
    )
    QTest.mouseClick(
        spin,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
        QPoint(x, spin.height() * 3 // 4),
    )
    assert spin.value() == 4
    assert spin.buttonSymbols() == QAbstractSpinBox.ButtonSymbols.UpDownArrows

    combo = QComboBox()
    combo.addItems(["alpha", "beta"])
    combo.resize(160, combo.sizeHint().height())
    qtbot.addWidget(combo)
    combo.show()
    qtbot.waitExposed(combo)
    x = combo.width() - BUTTON_W // 2
    QTest.mouseClick(
        combo,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
        QPoint(x, combo.height() // 2),
    )
    qtbot.waitUntil(lambda: combo.view().isVisible())
    combo.hidePopup()
