"""The shared look of the list pages (Discover, a model page, Downloads, Library).

A page has the same frame everywhere: margins on the spacing scale, a header with the
page's title, a muted one-line summary under it and the page's actions on the right
(``PageHeader``). Tables are rows, not a spreadsheet: no grid, left-aligned headers, a
line between rows, room around the cell widgets, and a soft selection that keeps the
row's text and chips readable (``style_table``). Status lines say errors in the theme's
danger colour (``StatusLabel``); long names are elided in the middle, whole in the
tooltip (``ElidedLabel``).

Colours that the app-wide stylesheet (``ui/style/qss.py``) has no rule for come from
the tokens and are re-applied when the theme changes (``ThemeHook``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QBoxLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from hearth.ui.style.icons import icon
from hearth.ui.style.theme_hook import ThemeHook, app_tokens, set_sheet
from hearth.ui.style.tokens import SPACE, Tokens

log = logging.getLogger(__name__)

# The pages' margins: as Settings' column (left/right xl, top l, bottom xl).
PAGE_MARGINS = (SPACE["xl"], SPACE["l"], SPACE["xl"], SPACE["xl"])
ROW_HEIGHT = 44  # a table row: a button of the stylesheet's height with s above and below


def page_layout(widget: QWidget) -> QVBoxLayout:
    """``widget``'s column with the pages' margins and spacing."""
    col = QVBoxLayout(widget)
    col.setContentsMargins(*PAGE_MARGINS)
    col.setSpacing(SPACE["m"])
    return col


def _rgba(color: str, alpha: float) -> str:
    value = color.lstrip("#")
    r, g, b = (int(value[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r}, {g}, {b}, {alpha})"


def table_sheet(t: Tokens) -> str:
    """Rows with a line between them and a tinted (not filled) selection: the text and
    the chips of a selected row keep their own colours."""
    tint = _rgba(t.accent_fill, 0.22 if t.dark else 0.12)
    return (
        f"QTableView {{ gridline-color: {t.border}; }}"
        f"QTableView::item {{ border: none; border-bottom: 1px solid {t.border}; "
        f"padding: 0px {SPACE['s']}px; }}"
        f"QTableView::item:selected {{ background: {tint}; color: {t.text}; }}"
        f"QHeaderView::section {{ padding: {SPACE['s']}px {SPACE['s']}px; }}"
    )


def style_table(table: QTableWidget, *, row_height: int = ROW_HEIGHT) -> None:
    """The list look for ``table`` (see the module's docstring), following the theme."""
    table.setShowGrid(False)
    table.setWordWrap(False)
    table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
    table.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # no dotted focus cell
    table.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
    table.verticalHeader().hide()
    table.verticalHeader().setDefaultSectionSize(row_height)
    header = table.horizontalHeader()
    header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
    header.setHighlightSections(False)
    ThemeHook(table, lambda t: table.setStyleSheet(table_sheet(t)))


def size_widget_column(table: QTableWidget, col: int, *, air: int = SPACE["s"]) -> None:
    """Column ``col`` as wide as its widest cell widget plus the item padding and
    ``air``: a header's ResizeToContents does not count the padding that insets cell
    widgets (the column's resize mode should be Fixed)."""
    widest = 0
    for row in range(table.rowCount()):
        cell = table.cellWidget(row, col)
        if cell is None:
            continue
        cell.ensurePolished()
        for child in cell.findChildren(QWidget):
            child.ensurePolished()  # their style sheets' paddings count in their sizes
        widest = max(widest, cell.sizeHint().width())
    title = table.horizontalHeader().sectionSizeFromContents(col).width()
    table.setColumnWidth(col, max(title, widest + 2 * SPACE["s"] + air))


def fit_height_to_rows(table: QTableWidget, *, min_rows: int = 1) -> None:
    """Cap ``table``'s height at its rows (at least ``min_rows``), so a short list is
    not a tall empty box; a long one still scrolls within what the layout gives."""
    rows = sum(table.rowHeight(r) for r in range(table.rowCount()) if not table.isRowHidden(r))
    rows = max(rows, min_rows * table.verticalHeader().defaultSectionSize())
    header = table.horizontalHeader()
    header.ensurePolished()  # its style sheet's padding counts in its height
    header_h = max(header.height() if header.isVisible() else 0, header.sizeHint().height())
    scrollbar = table.horizontalScrollBar()
    bar = scrollbar.sizeHint().height() if scrollbar.isVisible() else 0
    table.setMaximumHeight(rows + header_h + bar + 2 * table.frameWidth())


class StatusLabel(QLabel):
    """A status line: muted words, or an error in the theme's danger colour; hidden
    while it has nothing to say."""

    def __init__(self, parent: QWidget | None = None, *, accessible: str = "") -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        if accessible:
            self.setAccessibleName(accessible)
        self.error = False
        self._hook = ThemeHook(self, self._restyle)
        self.hide()

    def say(self, text: str, *, error: bool = False) -> None:
        self.error = error and bool(text)
        self.setText(text)
        self.setVisible(bool(text))
        self._restyle(app_tokens())

    def _restyle(self, t: Tokens) -> None:
        color = t.danger if getattr(self, "error", False) else t.text_muted
        set_sheet(self, f"color: {color};")


class ElidedLabel(QLabel):
    """One line that elides in the middle to fit, its whole text in the tooltip."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setMinimumWidth(SPACE["xxl"])
        self.full_text = ""
        self.set_full_text(text)

    def set_full_text(self, text: str) -> None:
        self.full_text = text
        self.setToolTip(text)
        self._elide()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        room = max(0, self.contentsRect().width())
        metrics = self.fontMetrics()
        self.setText(metrics.elidedText(self.full_text, Qt.TextElideMode.ElideMiddle, room))


class IconButton(QPushButton):
    """A push button with an icon (``style.icons`` kind) in the theme's colour; icon
    only when ``text`` is empty, its accessible name and tooltip saying what it does."""

    def __init__(
        self,
        kind: str,
        accessible: str,
        slot: Callable[[], object],
        text: str = "",
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(text, parent)
        self.kind = kind
        self.setAccessibleName(accessible)
        self.setToolTip(accessible)
        self.clicked.connect(lambda _checked=False: slot())
        self._hook = ThemeHook(self, self._refresh_icon)

    def set_primary(self, primary: bool) -> None:
        """Make this the view's main action (filled, its icon in the fill's text colour)."""
        if bool(self.property("primary")) != primary:
            self.setProperty("primary", primary)
            self.style().unpolish(self)
            self.style().polish(self)
        self._refresh_icon(app_tokens())

    def _refresh_icon(self, t: Tokens) -> None:
        primary = bool(self.property("primary"))
        self.setIcon(icon(self.kind, t, color=t.on_accent if primary else None))


class PageHeader(QWidget):
    """A page's title, a muted summary line under it, and its actions on the right."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel(title, self)
        self.title.setProperty("role", "title")
        self.title.setAccessibleName(f"{title} page")
        self.subtitle = StatusLabel(self)
        words = QVBoxLayout()
        words.setContentsMargins(0, 0, 0, 0)
        words.setSpacing(SPACE["xs"])
        words.addWidget(self.title)
        words.addWidget(self.subtitle)
        self.actions_row = QHBoxLayout()
        self.actions_row.setSpacing(SPACE["s"])
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(SPACE["m"])
        row.addLayout(words, 1)
        row.addLayout(self.actions_row)
        row.setAlignment(self.actions_row, Qt.AlignmentFlag.AlignTop)

    def add_action(self, widget: QWidget) -> None:
        self.actions_row.addWidget(widget)

    def set_subtitle(self, text: str) -> None:
        self.subtitle.say(text)


def add_row(layout: QBoxLayout, *widgets: QWidget, stretch_first: bool = True) -> QHBoxLayout:
    """A row of ``widgets`` (the first takes the room) added to ``layout``."""
    row = QHBoxLayout()
    row.setSpacing(SPACE["s"])
    for i, widget in enumerate(widgets):
        row.addWidget(widget, 1 if (i == 0 and stretch_first) else 0)
    layout.addLayout(row)
    return row
