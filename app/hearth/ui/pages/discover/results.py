"""Discover's search results: one row per Hub repo, opened with a single click.

A row says what a user compares before opening a repo, as LM Studio's and Jan's
lists do: the model's name, who published it, how popular and how recent it is, and
whether it is gated (its terms must be accepted on the Hub first). The list only
draws; the page (``discover.DiscoverPage``) opens the repo an item names
(``Qt.UserRole``).
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

from hearth.hub import ModelSummary
from hearth.ui.pages.common import plural
from hearth.ui.style.theme_hook import ThemeHook
from hearth.ui.style.tokens import RADIUS, SPACE, Tokens
from hearth.ui.widgets.page_style import ElidedLabel

log = logging.getLogger(__name__)


def meta_line(summary: ModelSummary) -> str:
    """ "by bartowski · 12,345 downloads · 67 likes · updated 3 Jan 2025 · gated"."""
    parts = [f"by {summary.author}", plural(summary.downloads, "download"),
             plural(summary.likes, "like")]  # fmt: skip
    if summary.last_modified is not None:
        when = summary.last_modified
        parts.append(f"updated {when.day} {when:%b %Y}")
    if summary.gated:
        parts.append("gated: accept its terms on the Hub")
    return " · ".join(parts)


class ResultRow(QWidget):
    """The widget drawn in one result's item: name over a muted line, a chevron."""

    def __init__(self, summary: ModelSummary, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.summary = summary
        name = summary.repo_id.split("/", 1)[-1]
        self.name_label = ElidedLabel(name, self)
        self.name_label.setProperty("role", "subtitle")
        self.name_label.setToolTip(summary.repo_id)
        self.meta_label = ElidedLabel(meta_line(summary), self)
        self.meta_label.setProperty("role", "muted")
        self.chevron = QLabel("\u203a", self)  # a chevron: the row opens
        self.chevron.setProperty("role", "subtitle")
        for label in (self.name_label, self.meta_label, self.chevron):
            label.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        words = QVBoxLayout()
        words.setContentsMargins(0, 0, 0, 0)
        words.setSpacing(SPACE["xs"])
        words.addWidget(self.name_label)
        words.addWidget(self.meta_label)
        row = QHBoxLayout(self)
        row.setContentsMargins(SPACE["l"], SPACE["m"], SPACE["l"], SPACE["m"])
        row.setSpacing(SPACE["m"])
        row.addLayout(words, 1)
        row.addWidget(self.chevron)


def results_sheet(t: Tokens) -> str:
    return (
        f"QListWidget#discoverResults {{ border: 1px solid {t.border}; "
        f"border-radius: {RADIUS['m']}px; padding: 0px; }}"
        f"QListWidget#discoverResults::item {{ border: none; "
        f"border-bottom: 1px solid {t.border}; }}"
        f"QListWidget#discoverResults::item:hover {{ background: {t.surface_alt}; }}"
        f"QListWidget#discoverResults::item:selected {{ background: {t.surface_alt}; "
        f"color: {t.text}; }}"
    )


class ResultsList(QListWidget):
    """The hits of a search, one :class:`ResultRow` each."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("discoverResults")
        self.setAccessibleName("Search results")
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setVerticalScrollMode(QListWidget.ScrollMode.ScrollPerPixel)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setUniformItemSizes(True)
        self._hook = ThemeHook(self, lambda t: self.setStyleSheet(results_sheet(t)))

    def add_summary(self, summary: ModelSummary) -> QListWidgetItem:
        item = QListWidgetItem(self)
        item.setData(Qt.ItemDataRole.UserRole, summary.repo_id)
        item.setData(Qt.ItemDataRole.AccessibleTextRole, summary.repo_id)
        item.setToolTip(f"Open {summary.repo_id}")
        row = ResultRow(summary)
        item.setSizeHint(QSize(0, row.sizeHint().height()))
        self.setItemWidget(item, row)
        self.fit_height()
        return item

    def fit_height(self) -> None:
        """As tall as its rows (a few hits are not a tall empty box); more scroll."""
        rows = sum(self.sizeHintForRow(i) for i in range(self.count()))
        self.setMaximumHeight(max(rows, 1) + 2 * self.frameWidth())

    def clear(self) -> None:
        super().clear()
        self.setMaximumHeight(16_777_215)  # QWIDGETSIZE_MAX: room for "Searching…"

    def row_widget(self, index: int) -> ResultRow | None:
        widget = self.itemWidget(self.item(index))
        return widget if isinstance(widget, ResultRow) else None
