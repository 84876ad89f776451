"""The list pages' shared look (``ui/widgets/page_style.py``) holds on real pages: a
table's chips and buttons are never squeezed by the rows' padding, a short table is as
tall as its rows (no empty box, no scroll bar), a search hit says who published it
and how popular it is, and an error line takes the theme's danger colour, also after
the theme changes."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication, QPushButton, QTableWidget
from pytestqt.qtbot import QtBot

from fake_hub import FakeFile, FakeHub
from hearth.hardware import SystemMemory
from hearth.hardware.probe import RAM_RESERVE_BYTES
from hearth.ui.machine_speed import MachineSpeed
from hearth.ui.pages.discover.page import DiscoverPage
from hearth.ui.pages.discover.quant_table import COL_ACTION, COL_FIT
from hearth.ui.pages.library.page import COLUMNS, LibraryPage
from hearth.ui.pages.services import AppServices
from hearth.ui.style.theme import apply_theme
from hearth.ui.style.tokens import DARK, LIGHT
from hearth.ui.tasks import TaskSet
from hearth.ui.widgets.fit_chip import ChipLevel
from hearth.ui.widgets.page_style import StatusLabel
from hub_testing import FAST_RETRY, isolated_hf  # noqa: F401 - autouse: a file keyring

pytestmark = pytest.mark.ui

GIB = 1024**3
REPO = "someone/Tiny-GGUF"
MACHINE = SystemMemory(32 * GIB, 16 * GIB + RAM_RESERVE_BYTES, 4, 8)


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tiny_model_q8: Path, tiny_model_q4km: Path):
    with FakeHub() as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        fake.add_repo(
            REPO,
            {
                "tiny-Q8_0.gguf": tiny_model_q8.read_bytes(),
                "tiny-Q4_K_M.gguf": tiny_model_q4km.read_bytes(),
                "README.md": FakeFile(b"# Tiny", lfs=False),
            },
        )
        yield fake


def assert_rows_shown_whole(table: QTableWidget) -> None:
    """Every row in view without scrolling, and no empty box below the last."""
    assert table.verticalScrollBar().maximum() == 0, "the rows scroll"
    rows = sum(table.rowHeight(r) for r in range(table.rowCount()))
    spare = table.viewport().height() - rows
    assert 0 <= spare <= 4, f"{spare} px of empty table under the rows"


def assert_not_squeezed(table: QTableWidget, col: int) -> None:
    """The cell widgets of ``col`` get at least the width they ask for."""
    for row in range(table.rowCount()):
        cell = table.cellWidget(row, col)
        assert cell is not None
        for child in cell.findChildren(QPushButton) or [cell]:
            assert child.width() >= child.sizeHint().width(), (row, col, child)


def test_quant_table_rows_whole_and_nothing_cut(qtbot: QtBot, arun, hub: FakeHub) -> None:
    services = AppServices(
        download_options={"retry": FAST_RETRY, "reserve_bytes": 0, "token_provider": lambda: None},
        system=MACHINE,
    )
    page = DiscoverPage(services, TaskSet(), speed=MachineSpeed(ram_bps=40e9))
    qtbot.addWidget(page)
    page.resize(1300, 800)
    page.show()
    mp = page.model_page

    async def scenario() -> None:
        await page.open_model(REPO)
        await arun.wait_until(lambda: all(mp.fit_texts()), 20, "the fit chips")
        for theme in ("light", "dark"):
            apply_theme(theme)
            await arun.wait_until(lambda: mp.table.chip(0) is not None, 5, "the chips")
            await arun.wait_until(lambda: mp.table.verticalScrollBar().maximum() == 0, 5, "fit")
            assert_rows_shown_whole(mp.table)
            assert_not_squeezed(mp.table, COL_ACTION)
            for row in range(mp.table.rowCount()):
                chip = mp.table.chip(row)
                assert chip is not None
                assert chip.width() >= chip.sizeHint().width(), chip.text()
            starred = [
                mp.table.models[r].quant
                for r in range(mp.table.rowCount())
                if mp.table.item(r, 0).toolTip() == "The best fit for this computer"  # type: ignore[union-attr]
            ]
            assert starred == ["Q8_0"]  # the largest that fits, as hearth pull suggests
            assert mp.status.text().startswith("Q8_0 is the best fit here")
            assert mp.table.columnWidth(COL_FIT) >= max(
                c.sizeHint().width() for r in range(2) if (c := mp.table.chip(r))
            )
        await services.aclose()

    arun(scenario())


def test_search_hits_say_who_and_how_popular(qtbot: QtBot, arun, hub: FakeHub) -> None:
    hub.add_repo("corp/Gated-GGUF", {"g-Q4_K_M.gguf": b"GGUF" + b"\0" * 64}, gated="manual")
    page = DiscoverPage(AppServices(system=MACHINE), TaskSet(), speed=MachineSpeed(ram_bps=1e9))
    qtbot.addWidget(page)
    page.resize(1000, 700)
    page.show()

    async def scenario() -> None:
        task = page.search("GGUF")
        assert task is not None
        await task
        rows = {
            w.summary.repo_id: w for i in range(page.list.count()) if (w := page.list.row_widget(i))
        }
        tiny = rows[REPO]
        assert tiny.name_label.full_text == "Tiny-GGUF"  # the name, then who published it
        assert tiny.meta_label.full_text.startswith("by someone · ")
        assert "download" in tiny.meta_label.full_text and "like" in tiny.meta_label.full_text
        assert "gated" in rows["corp/Gated-GGUF"].meta_label.full_text
        assert "gated" not in tiny.meta_label.full_text
        # A few hits are a short list, not a tall empty box.
        assert page.list.height() <= sum(page.list.sizeHintForRow(i) for i in range(2)) + 4

    arun(scenario())


def test_library_rows_whole_and_nothing_cut(qtbot: QtBot, arun, tiny_model_q8: Path) -> None:
    page = LibraryPage(AppServices(system=MACHINE), TaskSet(), discover=list,
                       speed=MachineSpeed(ram_bps=40e9))  # fmt: skip
    qtbot.addWidget(page)
    page.resize(800, 500)  # a 900x650 window less the rail
    page.show()

    async def scenario() -> None:
        await page.import_file(tiny_model_q8)
        await arun.wait_until(lambda: (c := page.fit_chip(0)) and "tok/s" in c.text(), 20, "chip")
        await arun.wait_until(lambda: page.table.verticalScrollBar().maximum() == 0, 5, "fit")

    arun(scenario())
    assert_rows_shown_whole(page.table)
    last = page.table.columnCount() - 1
    assert_not_squeezed(page.table, last)
    load = page.table.cellWidget(0, last).findChild(QPushButton)
    assert load is not None and load.text() == "Load"  # the main action, first and in words
    assert not page.found_table.isVisible()  # nothing found: a line says so, no empty table
    assert "LM Studio" in page.found_status.text()
    status = page.status.text()  # what just happened, and the count
    assert status.startswith(f"Imported {tiny_model_q8.name} · ") and "1 model · " in status


def test_an_error_line_takes_the_danger_colour_of_each_theme(
    qtbot: QtBot, qapp: QApplication
) -> None:
    label = StatusLabel()
    qtbot.addWidget(label)
    apply_theme("light")
    label.say("Could not reach Hugging Face.", error=True)
    assert label.isVisibleTo(label.parentWidget() or label) or not label.isHidden()
    assert LIGHT.danger in label.styleSheet()
    apply_theme("dark")
    qtbot.waitUntil(lambda: DARK.danger in label.styleSheet())
    label.say("3 models.")
    assert DARK.text_muted in label.styleSheet()
    label.say("")
    assert label.isHidden()  # nothing to say takes no room


def test_a_broken_file_says_its_problem_in_red_and_cannot_load(
    qtbot: QtBot, arun, tmp_path: Path, tiny_model_q8: Path
) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "broken-Q4_K_M.gguf").write_bytes(b"not a gguf file at all" * 10)
    page = LibraryPage(AppServices(system=MACHINE), TaskSet(), discover=list,
                       speed=MachineSpeed(ram_bps=40e9))  # fmt: skip
    qtbot.addWidget(page)
    page.resize(1800, 600)  # room for the Problem column beside the name
    page.show()

    async def scenario() -> None:
        await page.add_folder(folder)
        await page.import_file(tiny_model_q8)
        await arun.wait_until(lambda: len(page.models) == 2, 20, "two rows")

    apply_theme("light")
    arun(scenario())
    row = next(i for i, m in enumerate(page.models) if m.error)
    problem = page.table.item(row, COLUMNS.index("Problem"))
    assert problem is not None and problem.text() == page.models[row].error
    assert not page.table.isColumnHidden(COLUMNS.index("Problem"))
    assert problem.foreground().color().name() == LIGHT.danger
    last = page.table.columnCount() - 1
    load = page.table.cellWidget(row, last).findChild(QPushButton)
    assert load is not None and not load.isEnabled() and load.toolTip() == problem.text()
    qtbot.waitUntil(lambda: page.table.horizontalScrollBar().maximum() == 0)  # elided, not wide
    chip = page.fit_chip(row)
    assert chip is not None and chip.level is ChipLevel.BAD and chip.toolTip() == problem.text()
    apply_theme("dark")
    qtbot.waitUntil(lambda: problem.foreground().color().name() == DARK.danger)
    page.resize(1300, 500)  # less room: the red chip and Load's tooltip say it
    qtbot.waitUntil(lambda: page.table.isColumnHidden(COLUMNS.index("Problem")))
    assert page.table.columnWidth(0) >= 240  # the name keeps its room
    assert "1 can't load" in page.status.text()
