"""Discover's opening view: picked models by category, each with a fit chip.

The curated list is the one table of picks (``hub.picks``, ``resources/picks.json``),
which the Welcome window and the quick start also choose from; when the Hub
answers, its trending GGUF repos join as a "Trending" category (offline: the file
alone, and no error: picks work without a network). Each pick is a card; a single
click (or Enter) opens the repo's model page (the card is ``ui.pick_card``'s, shared with
the Welcome window). The chips are judged from the file size
of the default quant (``hardware.speed.rough_fit``) against this machine, with the
speed estimate from its measured memory bandwidth.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QButtonGroup,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from hearth.hardware.probe import SystemMemory
from hearth.hardware.speed import Bandwidth
from hearth.hub.picks import TRENDING, Pick, PicksFile, default_picks, trending
from hearth.ui.style.tokens import SPACE
from hearth.ui.threads import in_thread
from hearth.ui.widgets.page_style import IconButton
from hearth.ui.widgets.pick_card import PickCard

log = logging.getLogger(__name__)

ALL = "all"
COLUMNS_WIDE = 3
WIDE_PX = 1100  # from this width on, three columns of cards; else two


class PicksView(QWidget):
    """Category filters above a grid of :class:`PickCard`."""

    repo_chosen = Signal(str)
    recommended_requested = Signal()

    def __init__(self, parent: QWidget | None = None, *, picks: PicksFile | None = None) -> None:
        """``picks`` replaces the shipped table (tests)."""
        super().__init__(parent)
        self.setObjectName("discoverPicks")
        self.setAccessibleName("Picks")
        picks_file = picks or default_picks()
        self.categories: dict[str, str] = {ALL: "All", **picks_file.categories}
        self.cards: list[PickCard] = []
        self.category = ALL
        self._system: SystemMemory | None = None
        self._bandwidth: Bandwidth | None = None
        self._columns = 0

        self.filters = QButtonGroup(self)
        self.filters.setExclusive(True)
        self.filter_row = QHBoxLayout()
        self.filter_row.setSpacing(SPACE["xs"])
        self.filter_buttons: dict[str, QPushButton] = {}
        for key, title in self.categories.items():
            self._add_filter(key, title)
        self.filter_row.addStretch(1)
        self.recommended_button = IconButton(
            "recommended", "Recommended models for this computer",
            self.recommended_requested.emit, "What fits this computer?", self,
        )  # fmt: skip
        self.filter_row.addWidget(self.recommended_button)

        self.grid_host = QWidget(self)
        self.grid = QGridLayout(self.grid_host)
        self.grid.setContentsMargins(0, 0, SPACE["s"], 0)  # clear of the scroll bar
        self.grid.setSpacing(SPACE["m"])
        self.scroll_area = QScrollArea(self)
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll_area.setWidget(self.grid_host)
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(SPACE["m"])
        col.addLayout(self.filter_row)
        col.addWidget(self.scroll_area, 1)
        for pick in picks_file.picks:
            self._add_card(pick)
        self.show_category(ALL)

    # ------------------------------------------------------------------ build
    def _add_filter(self, key: str, title: str) -> None:
        btn = QPushButton(title, self)
        btn.setCheckable(True)
        btn.setAccessibleName(f"Show {title.lower()} picks")
        btn.setObjectName(f"picksFilter_{key}")
        btn.clicked.connect(lambda _c=False, k=key: self.show_category(k))
        self.filters.addButton(btn)
        self.filter_buttons[key] = btn
        self.filter_row.insertWidget(len(self.filter_buttons) - 1, btn)

    def _add_card(self, pick: Pick) -> PickCard:
        card = PickCard(pick, self.grid_host)
        card.activated.connect(self.repo_chosen)
        self.cards.append(card)
        if self._system is not None:
            card.judge(self._system, self._bandwidth)
        return card

    def visible_cards(self) -> list[PickCard]:
        return [c for c in self.cards if self.category in (ALL, c.pick.category)]

    def show_category(self, key: str) -> None:
        self.category = key
        self.filter_buttons[key].setChecked(True)
        for name, btn in self.filter_buttons.items():  # the chosen one looks chosen
            btn.setProperty("primary", name == key)
            btn.style().unpolish(btn)
            btn.style().polish(btn)
        self._layout_cards()

    def _layout_cards(self) -> None:
        while self.grid.count():
            self.grid.takeAt(0)
        for card in self.cards:
            card.hide()
        columns = COLUMNS_WIDE if self.width() >= WIDE_PX else 2
        shown = self.visible_cards()
        for i, card in enumerate(shown):
            self.grid.addWidget(card, i // columns, i % columns)
            card.show()
        for c in range(COLUMNS_WIDE):
            self.grid.setColumnStretch(c, 1 if c < columns else 0)
        self.grid.setRowStretch(len(shown) // columns + 1, 1)
        self._columns = columns

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        if (COLUMNS_WIDE if self.width() >= WIDE_PX else 2) != self._columns:
            self._layout_cards()

    # ------------------------------------------------------------------ data
    def judge_all(self, system: SystemMemory, bandwidth: Bandwidth | None) -> None:
        """Colour every chip for this machine."""
        self._system, self._bandwidth = system, bandwidth
        for card in self.cards:
            card.judge(system, bandwidth)

    async def add_trending(self, limit: int = 9) -> int:
        """Add the Hub's trending GGUF repos (not already picked); how many were added.
        Offline or refused: none, and no error (the curated picks stand alone)."""
        try:
            found = await in_thread(trending, limit)
        except Exception as exc:
            log.info("no trending models from the Hub (%s); showing the picks file only", exc)
            return 0
        have = {c.pick.repo for c in self.cards}
        new = [p for p in found if p.repo not in have]
        if not new:
            return 0
        if TRENDING not in self.filter_buttons:
            self.categories[TRENDING] = "Trending"
            self._add_filter(TRENDING, "Trending")
        for pick in new:
            self._add_card(pick)
        self._layout_cards()
        return len(new)

    def card_for(self, repo: str) -> PickCard | None:
        return next((c for c in self.cards if c.pick.repo == repo), None)
