"""The Library's "Found on this disk" section: other apps' GGUFs, to import in place.

LM Studio, Ollama, GPT4All, Jan and the Hugging Face cache keep models Hearth can
run where they are (``library.discover_all``, scanned in a thread). The section lists
the ones not yet in the library, each with Import; with none it says where it looked
instead of showing an empty table. Importing is the page's (``import_requested``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from hearth.core.units import format_bytes
from hearth.library import DiscoveredModel
from hearth.ui.pages.common import button, button_cell, plural
from hearth.ui.pages.library.rows import make_table
from hearth.ui.style.tokens import SPACE
from hearth.ui.widgets.page_style import (
    IconButton,
    fit_height_to_rows,
    size_widget_column,
    style_table,
)

log = logging.getLogger(__name__)

FOUND_COLUMNS = ["Name", "App", "Size", "Path", ""]
COL_IMPORT = FOUND_COLUMNS.index("")
COL_PATH = FOUND_COLUMNS.index("Path")
MAX_ROWS_SHOWN = 5  # more scroll: the library above keeps the room
NONE_FOUND = (
    "Models of LM Studio, Ollama, GPT4All, Jan and the Hugging Face cache show up "
    "here, to import where they are."
)


class FoundPanel(QWidget):
    """The section's title, Scan again, a line of status and the found models."""

    import_requested = Signal(object)  # the DiscoveredModel to import in place
    scan_requested = Signal()  # Scan again

    def __init__(
        self, discover: Callable[[], list[DiscoveredModel]], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self._discover = discover
        self.found: list[DiscoveredModel] = []
        title = QLabel("Found on this disk", self)
        title.setProperty("role", "subtitle")
        self.scan_button = IconButton(
            "search", "Scan this disk for models", self.scan_requested.emit, "Scan again", self
        )
        self.status = QLabel("Looking for models other apps downloaded…", self)
        self.status.setProperty("role", "muted")
        self.status.setWordWrap(True)
        self.table = make_table(FOUND_COLUMNS, "Found on this disk", self)
        style_table(self.table)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(COL_IMPORT, QHeaderView.ResizeMode.Fixed)
        header.setSectionResizeMode(COL_PATH, QHeaderView.ResizeMode.Stretch)  # elided
        self.table.hide()
        head = QHBoxLayout()
        head.setSpacing(SPACE["s"])
        head.addWidget(title, 1)
        head.addWidget(self.scan_button)
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(SPACE["s"])
        col.addLayout(head)
        col.addWidget(self.status)
        col.addWidget(self.table)

    async def scan(self, have: set[str]) -> None:
        """Scan in a thread; list what is not in the library (``have``: resolved paths)."""
        self.scan_button.setEnabled(False)
        try:
            found = await asyncio.to_thread(self._discover)
        except Exception as exc:
            log.warning("scanning for models failed: %s", exc)
            found = []
        finally:
            self.scan_button.setEnabled(True)
        self.found = [d for d in found if str(d.path.resolve()) not in have]
        self.status.setText(
            NONE_FOUND
            if not self.found
            else f"{plural(len(self.found), 'model')} that other apps downloaded, "
            "ready to import where they are."
        )
        self._fill()

    def _fill(self) -> None:
        self.table.setRowCount(len(self.found))
        for row, item in enumerate(self.found):
            texts = [item.name, item.app, format_bytes(item.size_bytes), str(item.path)]
            for col, text in enumerate(texts):
                cell = QTableWidgetItem(text)
                cell.setToolTip(text)
                self.table.setItem(row, col, cell)
            imp = button("Import", f"Import {item.name}", partial(self.import_requested.emit, item))
            self.table.setCellWidget(row, COL_IMPORT, button_cell(imp))
        size_widget_column(self.table, COL_IMPORT)
        self.table.setVisible(bool(self.found))
        fit_height_to_rows(self.table)
        shown = min(len(self.found), MAX_ROWS_SHOWN)
        cap = self.table.maximumHeight()
        extra = sum(self.table.rowHeight(r) for r in range(shown, len(self.found)))
        self.table.setMaximumHeight(cap - extra)
