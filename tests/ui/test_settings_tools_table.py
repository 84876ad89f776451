"""Settings → Tools' table on its own: the rows it is handed, the chosen server kept by
name when the list changes, a row's State cell and its on/off switch."""

from __future__ import annotations

import pytest
from pytestqt.qtbot import QtBot

from hearth.tools import McpServerEntry
from hearth.ui.pages.settings.tools_table import ON_COLUMN, STATE_COLUMN, ServerTable
from hearth.ui.widgets.switch import Switch

pytestmark = pytest.mark.ui

CLOCK = McpServerEntry("clock", "stdio", command="uvx", args=("mcp-server-time",))
SEARCH = McpServerEntry("search", "http", url="http://127.0.0.1:9/mcp", disabled=True)
FILES = McpServerEntry("files", "stdio", command="npx", args=("server-files", "/tmp"))


def test_rows_state_and_switches(qtbot: QtBot) -> None:
    table = ServerTable()
    qtbot.addWidget(table)
    table.show_servers([CLOCK, SEARCH], lambda name: f"{name} not started")
    assert table.rowCount() == 2
    assert [table.item(r, 0).text() for r in range(2)] == ["clock", "search"]
    assert table.item(0, 2).text() == "uvx mcp-server-time"
    assert table.item(1, 2).toolTip() == "http://127.0.0.1:9/mcp"
    assert table.selected() == "clock"  # nothing chosen before: the first row

    switches = [table.cellWidget(r, ON_COLUMN) for r in range(2)]
    assert all(isinstance(s, Switch) for s in switches)
    on, off = switches
    assert isinstance(on, Switch) and isinstance(off, Switch)
    assert on.isChecked() and not off.isChecked()  # SEARCH is disabled
    with qtbot.waitSignal(table.switched) as flipped:
        off.setChecked(True)
    assert flipped.args == ["search", True]

    table.show_state("search", "running · 2 tools")
    assert table.item(1, STATE_COLUMN).text() == "running · 2 tools"
    assert table.item(1, STATE_COLUMN).toolTip() == "running · 2 tools"
    table.show_state("gone", "failed: no reason given")  # not a row: nothing changes
    assert table.item(0, STATE_COLUMN).text() == "clock not started"


def test_choice_follows_the_name(qtbot: QtBot) -> None:
    table = ServerTable()
    qtbot.addWidget(table)
    table.show_servers([CLOCK, SEARCH], str)
    table.select("search")
    assert table.selected() == "search"
    table.show_servers([FILES, CLOCK, SEARCH], str)  # one added in front
    assert table.currentRow() == 2 and table.selected() == "search"
    table.show_servers([], str)
    assert table.rowCount() == 0 and table.selected() is None
