"""How a row of the chat list looks: the title, and under it when or what matched.

A ``QListWidget`` row is plain text ("title\\nsubtitle", which tests and tooltips
read); ``ChatRowDelegate`` paints it as chat apps do: the title on one elided line in
the body colour, the subtitle smaller and muted, the open chat on a tinted, rounded
row with an accent bar, a hovered one lightly tinted. Search snippets mark matches
with ``[ ]`` (``ChatStore.search``); the delegate shows those words in bold instead of
the brackets. Colours come from the palette's theme tokens, so both themes follow.
"""

from __future__ import annotations

import logging
import re
import time

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget

from hearth.ui.style.theme import tokens_for
from hearth.ui.style.tokens import RADIUS, SPACE, TYPE, Tokens

log = logging.getLogger(__name__)

ROW_HEIGHT = 48  # px: two lines and their padding
_MATCH = re.compile(r"\[([^\[\]]*)\]")


def when(ts: float, now: float | None = None) -> str:
    """A conversation's last change as people say it: "Today 14:05", "Yesterday",
    a weekday within the week, else the date."""
    now = time.time() if now is None else now
    then, today = time.localtime(ts), time.localtime(now)
    days = (
        time.mktime((*today[:3], 0, 0, 0, 0, 0, -1)) - time.mktime((*then[:3], 0, 0, 0, 0, 0, -1))
    ) / 86400
    if round(days) <= 0:
        return time.strftime("Today %H:%M", then)
    if round(days) == 1:
        return "Yesterday"
    if days < 7:
        return time.strftime("%A", then)
    if then.tm_year == today.tm_year:
        return f"{time.strftime('%b', then)} {then.tm_mday}"
    return time.strftime("%Y-%m-%d", then)


def snippet_runs(text: str) -> list[tuple[str, bool]]:
    """``text`` split into (run, matched) pieces, the ``[ ]`` marks removed."""
    runs: list[tuple[str, bool]] = []
    pos = 0
    for m in _MATCH.finditer(text):
        if m.start() > pos:
            runs.append((text[pos : m.start()], False))
        runs.append((m.group(1), True))
        pos = m.end()
    if pos < len(text):
        runs.append((text[pos:], False))
    return runs


class ChatRowDelegate(QStyledItemDelegate):
    """Paints the chat list's rows; see the module docstring."""

    def __init__(self, view: QWidget) -> None:
        super().__init__(view)
        self._view = view

    def sizeHint(  # noqa: N802 - Qt override
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QSize:
        return QSize(option.rect.width(), ROW_HEIGHT)

    def paint(
        self,
        painter: QPainter,
        option: QStyleOptionViewItem,
        index: QModelIndex | QPersistentModelIndex,
    ) -> None:
        # The window's palette: the one the theme sets (a view's own may be restyled).
        t = tokens_for(self._view.window().palette())
        rect: QRect = option.rect.adjusted(SPACE["xs"], 2, -SPACE["xs"], -2)  # type: ignore[attr-defined]
        state = option.state  # type: ignore[attr-defined]
        selected = bool(state & QStyle.StateFlag.State_Selected)
        hovered = bool(state & QStyle.StateFlag.State_MouseOver)
        title, _, sub = str(index.data(Qt.ItemDataRole.DisplayRole) or "").partition("\n")
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        if selected:  # a raised card on the panel, with the accent bar
            painter.setPen(QPen(QColor(t.border), 1))
            painter.setBrush(QColor(t.surface))
            painter.drawRoundedRect(rect, RADIUS["m"], RADIUS["m"])
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(t.accent_fill))
            painter.drawRoundedRect(
                QRect(rect.left() + 1, rect.top() + 12, 3, rect.height() - 24), 1.5, 1.5
            )
        elif hovered:
            fill = QColor(t.surface)
            fill.setAlpha(150)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(fill)
            painter.drawRoundedRect(rect, RADIUS["m"], RADIUS["m"])
        text = rect.adjusted(SPACE["m"], 6, -SPACE["s"], -6)
        base = QFont(option.font)  # type: ignore[attr-defined]
        head = QFont(base)
        head.setWeight(QFont.Weight.DemiBold if selected else QFont.Weight.Medium)
        small = QFont(base)
        small.setPointSizeF(max(TYPE["caption"], base.pointSizeF() - 1))
        head_fm = QFontMetrics(head)
        painter.setFont(head)
        painter.setPen(QPen(QColor(t.text)))
        top = QRect(text.left(), text.top(), text.width(), head_fm.height())
        painter.drawText(
            top,
            int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
            head_fm.elidedText(title, Qt.TextElideMode.ElideRight, text.width()),
        )
        self._subtitle(painter, t, small, sub, text)
        painter.restore()

    @staticmethod
    def _subtitle(painter: QPainter, t: Tokens, font: QFont, sub: str, area: QRect) -> None:
        """The muted second line; a search snippet's matches in bold body colour."""
        fm = QFontMetrics(font)
        x, y = area.left(), area.bottom() - fm.height() + 1
        right = area.right()
        bold = QFont(font)
        bold.setWeight(QFont.Weight.Bold)
        for run, matched in snippet_runs(" ".join(sub.split())):
            use = bold if matched else font
            metrics = QFontMetrics(use)
            room = right - x
            if room <= metrics.horizontalAdvance("…"):
                break
            shown = metrics.elidedText(run, Qt.TextElideMode.ElideRight, room)
            painter.setFont(use)
            painter.setPen(QPen(QColor(t.text if matched else t.text_muted)))
            painter.drawText(
                QRect(x, y, room, fm.height()),
                int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
                shown,
            )
            if shown != run:
                break
            x += metrics.horizontalAdvance(run)
