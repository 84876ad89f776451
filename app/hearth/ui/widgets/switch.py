"""An on/off switch: a ``QCheckBox`` drawn as a sliding toggle with its label beside it.

The endpoint's "serve to other apps" is the one setting of the Server page that people
look for first (LM Studio's Developer page opens with its "Status: Running" toggle), and
a small stock check box reads as one option among many. Keeping ``QCheckBox`` as the base
keeps its API (``isChecked``, ``toggled``, keyboard and accessibility) unchanged; only the
painting differs. Its colours are the theme's tokens, read at paint time, so a theme
switch needs nothing more.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QPoint, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import QCheckBox, QWidget

from hearth.ui.style.theme import tokens_for
from hearth.ui.style.tokens import SPACE

log = logging.getLogger(__name__)

TRACK_W, TRACK_H = 36, 20
KNOB_MARGIN = 3


class Switch(QCheckBox):
    """A check box painted as a toggle; a click anywhere on it (label too) flips it."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setCursor(Qt.CursorShape.PointingHandCursor)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        fm = self.fontMetrics()
        text_w = fm.horizontalAdvance(self.text()) + SPACE["s"] if self.text() else 0
        return QSize(TRACK_W + text_w + 2, max(TRACK_H, fm.height()) + 4)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return self.sizeHint()

    def hitButton(self, pos: QPoint) -> bool:  # noqa: N802 - Qt override
        return self.rect().contains(pos)

    def track_rect(self) -> QRect:
        """Where the track is drawn: at the left edge, centred vertically."""
        return QRect(1, (self.height() - TRACK_H) // 2, TRACK_W, TRACK_H)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        t = tokens_for(self.palette())
        on, enabled = self.isChecked(), self.isEnabled()
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        track = QRectF(self.track_rect())
        # Off: a grey that still has 3:1 against the card (WCAG's rule for controls).
        fill = QColor(t.accent_fill if on else t.disabled_text)
        if not enabled:
            fill.setAlphaF(0.45)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(fill)
        radius = TRACK_H / 2
        painter.drawRoundedRect(track, radius, radius)
        knob_d = TRACK_H - 2 * KNOB_MARGIN
        knob_x = track.right() - KNOB_MARGIN - knob_d if on else track.left() + KNOB_MARGIN
        painter.setBrush(QColor("#ffffff"))
        painter.drawEllipse(QRectF(knob_x, track.top() + KNOB_MARGIN, knob_d, knob_d))
        if self.hasFocus():
            ring = QColor(t.accent)
            painter.setPen(ring)
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(track.adjusted(-1, -1, 1, 1), radius + 1, radius + 1)
        if self.text():
            painter.setPen(QColor(t.text if enabled else t.disabled_text))
            text_rect = self.rect().adjusted(TRACK_W + SPACE["s"] + 1, 0, 0, 0)
            painter.drawText(
                text_rect,
                int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
                self.text(),
            )
        painter.end()
