"""A page as the main window hosts it, and what its pixels say: shared by the layout
and contrast tests of the Settings and Server pages."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from PySide6.QtCore import QPoint, QRect
from PySide6.QtGui import QImage
from PySide6.QtWidgets import (
    QAbstractButton,
    QComboBox,
    QFrame,
    QLineEdit,
    QScrollArea,
    QSpinBox,
    QWidget,
)
from pytestqt.qtbot import QtBot

AA = 4.5  # WCAG AA for text
RAIL, CHROME = 84, 112  # the rail's width; menu, top bar and status bar heights
WIDE, NARROW = (1400, 900), (900, 650)


def host(qtbot: QtBot, page: QWidget, window: tuple[int, int]) -> QScrollArea:
    """``page`` in a scroll area the size the window gives a page at ``window``."""
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setWidget(page)
    qtbot.addWidget(area)
    area.resize(window[0] - RAIL, window[1] - CHROME)
    area.show()
    qtbot.waitExposed(area)
    return area


def visible_controls(page: QWidget) -> list[QWidget]:
    """The buttons and fields a user sees on ``page`` (not Qt's own helper widgets, nor
    a tab bar's scroll arrows)."""
    kinds = (QAbstractButton, QLineEdit, QComboBox, QSpinBox)
    return [
        w
        for w in page.findChildren(QWidget)
        if isinstance(w, kinds)
        and w.isVisibleTo(page)
        and not w.objectName().startswith("qt_")
        and w.parent() is not None
        and type(w.parent()).__name__ != "QTabBar"
    ]


def painted_background(image: QImage, rect: QRect) -> str:
    """The colour most pixels of ``rect`` have: what the text is painted on."""
    counts: Counter[int] = Counter()
    for y in range(max(rect.top(), 0), min(rect.bottom() + 1, image.height())):
        for x in range(max(rect.left(), 0), min(rect.right() + 1, image.width())):
            counts[image.pixel(x, y)] += 1
    return f"#{counts.most_common(1)[0][0] & 0xFFFFFF:06x}"


def assert_controls_whole(
    controls: Sequence[QWidget], sections: Sequence[QWidget], viewport: QWidget
) -> None:
    """Every control at least its own size (a button's text never cut), inside its
    card, and within the visible width of ``viewport``."""
    for widget in controls:
        name = widget.accessibleName() or widget.objectName() or type(widget).__name__
        assert widget.width() >= widget.minimumSizeHint().width(), name
        if isinstance(widget, QAbstractButton) and widget.text():
            assert widget.width() >= widget.sizeHint().width(), f"{name}: its text is cut"
        assert widget.height() >= widget.minimumSizeHint().height(), name
        section = next(s for s in sections if s.isAncestorOf(widget))
        inside = QRect(widget.mapTo(section, QPoint(0, 0)), widget.size())
        title = section.accessibleName()
        assert section.rect().contains(inside), f"{name} sticks out of {title}"
        left = widget.mapTo(viewport, QPoint(0, 0)).x()
        assert left >= 0 and left + widget.width() <= viewport.width(), f"{name} is cut off"
