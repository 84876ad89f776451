"""The model page's table: one row per quantization of a repo.

Each row is a file (quant, size), a coloured fit chip with the speed estimate for this
machine, and the row's download button. The table only draws; what a click or a
download event means is the model page's (``repo_downloads.RepoDownloads``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from functools import partial

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QIcon, QPixmap, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from hearth.core.units import format_bytes
from hearth.hardware.fit import FitEstimate
from hearth.hardware.speed import Bandwidth
from hearth.hub import GgufModel
from hearth.ui.pages.common import button, button_cell
from hearth.ui.style.icons import icon
from hearth.ui.style.theme_hook import ThemeHook, app_tokens
from hearth.ui.style.tokens import Tokens
from hearth.ui.widgets.fit_chip import FitChip, cell_chip, chip_cell, chip_for_estimate
from hearth.ui.widgets.page_style import (
    fit_height_to_rows,
    size_widget_column,
    style_table,
)

log = logging.getLogger(__name__)

COL_FILE, COL_QUANT, COL_SIZE, COL_FIT, COL_ACTION = range(5)
BUTTON_WIDTH = 140
CELL_MARGINS = 24  # a chip cell's inset (or its item padding) each side, and some air


def size_chip_column(table: QTableWidget, col: int) -> None:
    """Column ``col`` of ``chip_cell`` cells as wide as its widest chip (or its title),
    so none is cut: ResizeToContents does not measure cell widgets (the column's
    resize mode should be Fixed)."""
    chips = [
        chip for row in range(table.rowCount()) if (chip := cell_chip(table.cellWidget(row, col)))
    ]
    title = table.horizontalHeader().sectionSizeFromContents(col).width()
    for chip in chips:
        chip.ensurePolished()  # its style sheet's padding counts in its size
    widest = max((chip.sizeHint().width() for chip in chips), default=0)
    table.setColumnWidth(col, max(title, widest + CELL_MARGINS))


class QuantTable(QTableWidget):
    """The rows of ``fill``'s models; ``buttons`` maps a model's name to its button."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, 5, parent)
        self.models: list[GgufModel] = []
        self.buttons: dict[str, QPushButton] = {}
        self.suggested: str | None = None
        self._star_hook = ThemeHook(self, self._star)
        self.setHorizontalHeaderLabels(["File", "Quant", "Size", "Fit here", ""])
        self.setAccessibleName("Quantizations")
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)  # rows act by button
        style_table(self)
        size_title = self.horizontalHeaderItem(COL_SIZE)
        if size_title is not None:  # numbers and their title line up on the right
            size_title.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        header = self.horizontalHeader()
        header.setSectionResizeMode(COL_FILE, QHeaderView.ResizeMode.Stretch)
        for col in (COL_QUANT, COL_SIZE):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        # Cell widgets, which ResizeToContents measures without the item padding.
        header.setSectionResizeMode(COL_FIT, QHeaderView.ResizeMode.Fixed)
        header.setSectionResizeMode(COL_ACTION, QHeaderView.ResizeMode.Fixed)
        self._fit_chip_column()
        fit_height_to_rows(self)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        fit_height_to_rows(self)  # a horizontal scroll bar may have come or gone

    def mark_suggested(self, name: str | None) -> None:
        """A star on the file of the suggested model (``None``: no row fits)."""
        self.suggested = name
        self._star(app_tokens())

    def _star(self, t: Tokens) -> None:
        star = icon("recommended", t, color=t.good)
        blank = QPixmap(self.iconSize() if self.iconSize().isValid() else QSize(16, 16))
        blank.fill(Qt.GlobalColor.transparent)
        none = QIcon(blank) if self.suggested else QIcon()  # the names stay lined up
        for row, model in enumerate(self.models):
            item = self.item(row, COL_FILE)
            if item is None:
                continue
            chosen = model.name == self.suggested
            item.setIcon(star if chosen else none)
            item.setToolTip("The best fit for this computer" if chosen else item.text())

    def reset(self) -> None:
        self.suggested = None
        self.models, self.buttons = [], {}
        self.setRowCount(0)
        fit_height_to_rows(self)

    def fill(self, models: Sequence[GgufModel], clicked: Callable[[GgufModel], None]) -> None:
        """A row per model, its chip waiting for the fit; a click calls ``clicked``."""
        self.models, self.buttons = list(models), {}
        self.setRowCount(len(models))
        for row, model in enumerate(models):
            name = model.files[0].path if len(model.files) == 1 else f"{model.name} (split)"
            self.setItem(row, COL_FILE, QTableWidgetItem(name))
            self.setItem(row, COL_QUANT, QTableWidgetItem(model.quant or "?"))
            size = QTableWidgetItem(format_bytes(model.total_size))
            size.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.setItem(row, COL_SIZE, size)
            self.setCellWidget(row, COL_FIT, chip_cell(0))  # the item padding insets it
            label = model.quant or model.name
            btn = button("Download", f"Download {label}", partial(clicked, model))
            btn.setMinimumWidth(BUTTON_WIDTH)  # as wide as "Downloading 99%": no jumps
            btn.setEnabled(model.complete)
            if not model.complete:
                btn.setToolTip("Some parts of this split model are missing on the Hub.")
            self.buttons[model.name] = btn
            self.setCellWidget(row, COL_ACTION, button_cell(btn))
        size_widget_column(self, COL_ACTION)
        self._fit_chip_column()
        fit_height_to_rows(self)

    def chip(self, row: int) -> FitChip | None:
        return cell_chip(self.cellWidget(row, COL_FIT))

    def _fit_chip_column(self) -> None:
        size_chip_column(self, COL_FIT)

    def set_fit_unknown(self) -> None:
        for row in range(self.rowCount()):
            if (chip := self.chip(row)) is not None:
                chip.set_unknown("Unknown")
        self._fit_chip_column()

    def show_fit(
        self, estimates: Mapping[str, FitEstimate], bandwidth: Bandwidth | None, active: float
    ) -> None:
        """Each row's chip from its model's estimate (by name; none: unknown)."""
        for row, model in enumerate(self.models):
            est = estimates.get(model.name)
            chip = self.chip(row)
            if chip is None:
                continue
            if est is None:
                chip.set_unknown("Unknown")
            else:
                chip.set_chip(chip_for_estimate(est, bandwidth, active))
        self._fit_chip_column()

    def _row_of(self, quant: str) -> int | None:
        for row, model in enumerate(self.models):
            if (model.quant or "").upper() == quant.upper():
                return row
        return None

    def button_for(self, quant: str) -> QPushButton | None:
        row = self._row_of(quant)
        return None if row is None else self.buttons.get(self.models[row].name)

    def action_cell(self, quant: str) -> QWidget | None:
        """The cell holding the button of the row for ``quant``."""
        row = self._row_of(quant)
        return None if row is None else self.cellWidget(row, COL_ACTION)
