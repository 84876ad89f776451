"""The left rail: one item per page, its icon above its name, driving a page stack.

It owns the page list (names, widgets, the QStackedWidget's order); the main window
only says which pages exist. Tall pages can be wrapped in a scroll area, so a long form
never sets the window's minimum height (the window must fit an 800x600 screen).
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPen, QPixmap
from PySide6.QtWidgets import (
    QFrame,
    QListView,
    QListWidget,
    QListWidgetItem,
    QScrollArea,
    QStackedWidget,
    QWidget,
)

from hearth.ui.style.icons import icon
from hearth.ui.style.tokens import Tokens

log = logging.getLogger(__name__)

PAGE_ICONS = {
    "Chat": "chat",
    "Discover": "discover",
    "Downloads": "downloads",
    "Library": "library",
    "Server": "server",
    "Settings": "settings",
}
RAIL_WIDTH = 84
ITEM_HEIGHT = 58


class PageRail(QListWidget):
    def __init__(self, stack: QStackedWidget, tokens: Tokens, parent: QWidget | None = None):
        super().__init__(parent)
        self.stack = stack
        self.tokens = tokens
        self._names: list[str] = []
        self._widgets: dict[str, QWidget] = {}
        self._badges: dict[str, int] = {}  # a count drawn over a page's icon
        self.setObjectName("pageRail")
        self.setAccessibleName("Pages")
        self.setFixedWidth(RAIL_WIDTH)
        self.setViewMode(QListView.ViewMode.IconMode)  # icon above its label
        self.setFlow(QListView.Flow.TopToBottom)
        self.setMovement(QListView.Movement.Static)
        self.setWrapping(False)
        self.setIconSize(QSize(22, 22))
        self.setSpacing(0)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.currentRowChanged.connect(stack.setCurrentIndex)

    def add_page(self, name: str, widget: QWidget, *, scroll: bool = False) -> int:
        """Append a page; its index. ``scroll``: wrap a tall page in a scroll area."""
        if name in self._names:
            raise ValueError(f"there is already a page named {name!r}")
        self._names.append(name)
        self._widgets[name] = widget
        if scroll:
            area = QScrollArea(self.stack)
            area.setObjectName(f"{name.lower()}Scroll")
            area.setWidgetResizable(True)
            area.setFrameShape(QFrame.Shape.NoFrame)
            area.setWidget(widget)
            widget = area
        item = QListWidgetItem(name)
        item.setTextAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignBottom)
        item.setSizeHint(QSize(RAIL_WIDTH - 12, ITEM_HEIGHT))
        self.addItem(item)
        self._set_icon(self.count() - 1, name)
        return self.stack.addWidget(widget)

    def show_page(self, name: str) -> QWidget:
        """Switch to the page called ``name``; returns its widget. The rail takes the
        focus first, as a click on it would: otherwise Qt hands the focus of the page
        being hidden to the new page's first button, which then shows a focus ring."""
        self.setFocus(Qt.FocusReason.OtherFocusReason)
        self.setCurrentRow(self._names.index(name))
        page = self._widgets[name]
        if page.focusProxy() is not None:  # a page that says where typing goes (Chat)
            page.setFocus(Qt.FocusReason.OtherFocusReason)
        return page

    def page_names(self) -> list[str]:
        return list(self._names)

    def set_tokens(self, tokens: Tokens) -> None:
        """The theme changed: re-tint the icons."""
        self.tokens = tokens
        for row, name in enumerate(self._names):
            self._set_icon(row, name)

    def set_badge(self, name: str, count: int) -> None:
        """Show ``count`` over a page's icon (e.g. downloads running); 0 removes it."""
        row = self._names.index(name)
        self._badges[name] = max(0, count)
        self._set_icon(row, name)
        item = self.item(row)
        if item is not None:
            words = f"{name}: {count} in progress" if count else name
            item.setToolTip(words)
            item.setData(Qt.ItemDataRole.AccessibleTextRole, words)

    def badge(self, name: str) -> int:
        return self._badges.get(name, 0)

    def _set_icon(self, row: int, name: str) -> None:
        item = self.item(row)
        if item is not None and name in PAGE_ICONS:
            base = icon(PAGE_ICONS[name], self.tokens, color=self.tokens.text_muted)
            count = self._badges.get(name, 0)
            item.setIcon(self._with_badge(base, count) if count else base)

    def _with_badge(self, base: QIcon, count: int) -> QIcon:
        """``base`` with a small filled circle holding ``count`` at its top right, in
        the normal and the selected look."""
        badged = QIcon()
        for mode in (QIcon.Mode.Normal, QIcon.Mode.Selected):
            badged.addPixmap(self._badge_pixmap(base, count, mode), mode)
        return badged

    def _badge_pixmap(self, base: QIcon, count: int, mode: QIcon.Mode) -> QPixmap:
        size = 44  # twice the icon size: crisp on high-density screens
        pixmap = QPixmap(size, size)
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.drawPixmap(0, 6, base.pixmap(QSize(size - 8, size - 8), mode))
        disc = QRectF(size - 20, 0, 20, 20)
        ring = QPen(QColor(self.tokens.on_accent))  # stands out on the selected item too
        ring.setWidth(2)
        painter.setPen(ring)
        painter.setBrush(QColor(self.tokens.accent_fill))
        painter.drawEllipse(disc.adjusted(1, 1, -1, -1))
        font = QFont(self.font())
        font.setPixelSize(13)
        font.setBold(True)
        painter.setFont(font)
        painter.setPen(QColor(self.tokens.on_accent))
        painter.drawText(disc, Qt.AlignmentFlag.AlignCenter, str(count) if count < 10 else "9+")
        painter.end()
        return pixmap
