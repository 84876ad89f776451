"""Discover's model page on a small screen: it never widens the window.

A long repo name is elided in the title (the full name in its tooltip) instead of
raising the page's minimum width; under ``SIDE_BY_SIDE_WIDTH`` the model card goes
under the quantizations table, and beside it again when the page widens. The fit
column is as wide as its widest chip, so none is cut off.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from hearth.hardware.fit import FitVerdict
from hearth.ui.machine_speed import MachineSpeed
from hearth.ui.pages.discover.model_page import SIDE_BY_SIDE_WIDTH, ModelPage
from hearth.ui.pages.discover.quant_table import COL_FIT
from hearth.ui.pages.services import AppServices
from hearth.ui.tasks import TaskSet
from hearth.ui.widgets.fit_chip import Chip, ChipLevel, chip_cell

pytestmark = pytest.mark.ui

LONG = "bartowski/mistralai_Mistral-Small-3.2-24B-Instruct-2506-GGUF-with-a-longer-name"


def test_long_names_and_narrow_pages(qtbot: QtBot, arun, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the listing fails fast
    services = AppServices()
    page = ModelPage(services, TaskSet(), MachineSpeed(ram_bps=20e9))
    qtbot.addWidget(page)
    page.resize(800, 500)
    page.show()
    qtbot.waitExposed(page)
    task = page.open(LONG)
    arun(task, timeout=30)
    assert page.minimumSizeHint().width() < 800  # the name does not hold the page wide
    shown = page.title.text()
    assert shown != LONG and "…" in shown and page.title.toolTip() == LONG
    assert page.split.orientation() is Qt.Orientation.Vertical  # card under the table
    # Not listed: the reason alone, in the danger colour, under the title (no blank table).
    assert page.status.error and page.status.isVisible() and not page.split.isVisible()
    assert page.status.geometry().top() - page.title.geometry().bottom() < 40

    page.resize(SIDE_BY_SIDE_WIDTH + 400, 700)
    qtbot.waitUntil(lambda: page.split.orientation() is Qt.Orientation.Horizontal)
    qtbot.waitUntil(lambda: len(page.title.text()) > len(shown))  # more room, more name

    # The fit column follows its chips (cell widgets the header cannot measure).
    table = page.table
    table.setRowCount(1)
    table.setCellWidget(0, COL_FIT, chip_cell())
    chip = table.chip(0)
    assert chip is not None
    before = table.columnWidth(COL_FIT)
    chip.set_chip(Chip(ChipLevel.WARN, f"{FitVerdict.PARTIAL_GPU.value} · ~123.4 tok/s", ""))
    table.show_fit({}, None, 1.0)  # (no rows of its own: only the column is measured)
    assert table.columnWidth(COL_FIT) >= chip.sizeHint().width() > before
