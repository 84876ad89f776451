"""The Library's table: one row per local model, drawn; what a click does is the page's.

The texts come from ``library_rows`` (one definition of the columns), the capability
chips and fit chips are cell widgets, and the last column holds the row's actions
(``actions(model)``, made by the page: Load first, then folder and Delete). A model that
can't load says why in a Problem column in the theme's danger colour (shown only when
some model has a problem and there is room) and in a red "Can't load" chip, so the
reason stays on screen in a narrow window too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from PySide6.QtGui import QColor, QResizeEvent
from PySide6.QtWidgets import QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from hearth.hardware.fit import FitEstimate
from hearth.hardware.speed import Bandwidth, active_fraction
from hearth.library import LocalModel
from hearth.library.capabilities import Capability
from hearth.ui.pages.discover.quant_table import size_chip_column
from hearth.ui.pages.library.rows import (
    COL_CAPS,
    COL_FIT,
    COL_PROBLEM,
    COLUMNS,
    NARROW_HIDDEN,
    CapabilityChips,
    name_tooltip,
    row_chips,
    row_texts,
)
from hearth.ui.style.theme_hook import ThemeHook, app_tokens
from hearth.ui.style.tokens import Tokens
from hearth.ui.widgets.fit_chip import (
    Chip,
    ChipLevel,
    FitChip,
    cell_chip,
    chip_cell,
    chip_for_estimate,
)
from hearth.ui.widgets.page_style import (
    fit_height_to_rows,
    size_widget_column,
    style_table,
)

log = logging.getLogger(__name__)

COL_ACTIONS = len(COLUMNS) - 1
PROBLEM_WIDTH = 280  # px at most
NAME_MIN_WIDTH = 240  # the Problem column shows only while the name keeps this much
CANT_LOAD = "Can't load"


class LibraryTable(QTableWidget):
    """The rows of ``fill``'s models."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(COLUMNS), parent)
        self.models: list[LocalModel] = []
        self.narrow = False
        self.setHorizontalHeaderLabels(COLUMNS)
        self.setAccessibleName("Library models")
        self.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.setSelectionMode(QTableWidget.SelectionMode.SingleSelection)  # what to quantize
        style_table(self)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        # Cell widgets (measured by hand) and a problem, a sentence elided to its width.
        for col in (COL_CAPS, COL_FIT, COL_ACTIONS, COL_PROBLEM):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Fixed)
        self._problems_hook = ThemeHook(self, self._colour_problems)

    def fill(
        self,
        models: list[LocalModel],
        capabilities: Sequence[tuple[Capability, ...]],
        actions: Callable[[LocalModel], QWidget],
    ) -> None:
        self.models = models
        self.setRowCount(len(models))
        for row, model in enumerate(models):
            texts = row_texts(model)
            for col, text in enumerate(texts):
                item = QTableWidgetItem(text)
                item.setToolTip(name_tooltip(model, texts) if col == 0 else text)
                self.setItem(row, col, item)
            self.setCellWidget(row, COL_CAPS, CapabilityChips(capabilities[row]))
            self.setCellWidget(row, COL_FIT, chip_cell(0))  # the item padding insets it
            self.setCellWidget(row, COL_ACTIONS, actions(model))
        self._colour_problems(app_tokens())
        for col in (COL_CAPS, COL_ACTIONS):
            size_widget_column(self, col)
        size_chip_column(self, COL_FIT)
        self.show_columns(self.narrow)

    def show_columns(self, narrow: bool) -> None:
        """Narrow, the details give way (the name's tooltip keeps them); the Problem
        column shows only while the name keeps its room (else the row's red chip and
        Load's tooltip give the reason)."""
        self.narrow = narrow
        for col in NARROW_HIDDEN:
            self.setColumnHidden(col, narrow)
        problems = any(m.error for m in self.models)
        width = min(self.sizeHintForColumn(COL_PROBLEM), PROBLEM_WIDTH) if problems else 0
        others = sum(
            self.columnWidth(c)
            for c in range(1, self.columnCount())
            if c != COL_PROBLEM and not self.isColumnHidden(c)
        )
        room = self.viewport().width() - others - width  # what the name would keep
        self.setColumnHidden(COL_PROBLEM, not problems or narrow or room < NAME_MIN_WIDTH)
        if problems:
            self.setColumnWidth(COL_PROBLEM, width)
        fit_height_to_rows(self)  # a horizontal scroll bar may have come or gone

    def _colour_problems(self, t: Tokens) -> None:
        for row in range(self.rowCount()):
            item = self.item(row, COL_PROBLEM)
            if item is not None and item.text():
                item.setForeground(QColor(t.danger))

    def show_fit(self, fits: Sequence[FitEstimate | None], bandwidth: Bandwidth | None) -> None:
        """Each row's chip from its estimate (None: unknown, or can't load and why)."""
        for row, model in enumerate(self.models):
            chip = self.fit_chip(row)
            est = fits[row] if row < len(fits) else None
            if chip is None:
                continue
            if est is not None and model.metadata is not None:
                chip.set_chip(chip_for_estimate(est, bandwidth, active_fraction(model.metadata)))
            elif model.error:
                chip.set_chip(Chip(ChipLevel.BAD, CANT_LOAD, model.error))
            else:
                chip.set_unknown("Unknown")
        size_chip_column(self, COL_FIT)  # the chips' words, never cut
        self.show_columns(self.narrow)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self.show_columns(self.narrow)  # the room for the name changed

    def fit_chip(self, row: int) -> FitChip | None:
        return cell_chip(self.cellWidget(row, COL_FIT))

    def capability_chips(self, row: int) -> CapabilityChips | None:
        return row_chips(self, row)
