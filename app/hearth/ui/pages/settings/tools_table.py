"""Settings → Tools' list of MCP servers: one line a server (name, kind, command or URL,
an on/off switch, its state), as tall as its rows.

Kept out of ``tools_box.py``, which owns the servers and what is done to them: this
table only shows the rows it is handed and says which one is chosen and which switch
was flipped (``switched``). A long command is cut in the middle, never wrapped, with
the whole of it in the cell's tooltip; the height is counted again after a theme
switch, whose style sheet changes the header's and the rows' padding.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from hearth.tools import McpServerEntry
from hearth.ui.widgets.page_style import fit_height_to_rows
from hearth.ui.widgets.switch import Switch

log = logging.getLogger(__name__)
_RESTYLED = (QEvent.Type.StyleChange, QEvent.Type.FontChange, QEvent.Type.Polish)

COLUMNS = ("Name", "Kind", "Command or URL", "On", "State")
ON_COLUMN = 3
STATE_COLUMN = 4
MAX_TABLE_PX = 200


class ServerTable(QTableWidget):
    """The rows of ``show_servers``; ``switched(name, on)`` when a row's switch flips."""

    switched = Signal(str, bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(COLUMNS), parent)
        self.names: tuple[str, ...] = ()  # the server on each row, in order
        self.setAccessibleName("MCP servers")
        self.setHorizontalHeaderLabels(list(COLUMNS))
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.verticalHeader().setVisible(False)
        self.setWordWrap(False)
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(STATE_COLUMN, QHeaderView.ResizeMode.Stretch)

    def show_servers(self, entries: Sequence[McpServerEntry], state: Callable[[str], str]) -> None:
        """One row per entry, ``state(name)`` in its State cell; the row chosen before
        stays chosen, else the first is. The caller fits the height (``fit_height``)
        once the table is shown or hidden: a hidden header counts differently."""
        selected = self.selected()
        self.names = tuple(entry.name for entry in entries)
        self.setRowCount(len(entries))
        for row, entry in enumerate(entries):
            cells = (entry.name, entry.transport, entry.describe(), "", state(entry.name))
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                self.setItem(row, column, item)
            switch = Switch(parent=self)
            switch.setAccessibleName(f"Turn {entry.name} on or off")
            switch.setChecked(not entry.disabled)
            switch.toggled.connect(lambda on, name=entry.name: self.switched.emit(name, on))
            self.setCellWidget(row, ON_COLUMN, switch)
            if selected is not None and entry.name == selected:
                self.selectRow(row)
        if entries and self.currentRow() < 0:
            self.selectRow(0)

    def show_state(self, name: str, text: str) -> None:
        """``name``'s State cell says ``text`` (its server started, stopped or failed)."""
        for row, shown in enumerate(self.names):
            if shown == name and (item := self.item(row, STATE_COLUMN)) is not None:
                item.setText(text)
                item.setToolTip(text)

    def selected(self) -> str | None:
        row = self.currentRow()
        return self.names[row] if 0 <= row < len(self.names) else None

    def select(self, name: str) -> None:
        for row, shown in enumerate(self.names):
            if shown == name:
                self.selectRow(row)

    def fit_height(self) -> None:
        """The table as tall as its rows (at most ``MAX_TABLE_PX``)."""
        self.resizeRowsToContents()  # the switches set a row's height
        fit_height_to_rows(self)  # the header as styled, each row as laid out
        self.setFixedHeight(min(MAX_TABLE_PX, self.maximumHeight()))

    def event(self, event: QEvent) -> bool:
        if event.type() in _RESTYLED:
            QTimer.singleShot(0, self.fit_height)  # once the new style is applied
        return super().event(event)
