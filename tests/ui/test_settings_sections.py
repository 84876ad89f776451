"""Settings as sections: every control fits at 1400x900 and 900x650 in both themes (the
page scrolls instead of clipping), the section index scrolls to a section and follows
the scrolling, and the sections' texts meet WCAG AA on the background really painted.

The page sits in a scroll area the size of the window's page area, as ``PageRail``
hosts it (the window less its rail, top bar, menu and status bar).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QApplication,
    QGroupBox,
    QLabel,
    QScrollArea,
    QWidget,
)
from pytestqt.qtbot import QtBot

from hearth.config.engines import EngineRegistry
from hearth.ui.app_settings import SettingsStore
from hearth.ui.pages.settings.page import SettingsPage
from hearth.ui.style.theme import apply_theme
from hearth.ui.style.tokens import contrast_ratio
from hearth.ui.widgets.section import Section
from hub_testing import isolated_hf  # noqa: F401 - autouse: a file keyring
from page_frame import (
    AA,
    CHROME,
    NARROW,
    RAIL,
    WIDE,
    assert_controls_whole,
    host,
    painted_background,
    visible_controls,
)

pytestmark = pytest.mark.ui

TITLES = [
    "Models",
    "Models folders",
    "Downloads",
    "Hugging Face account",
    "Remote engines",
    "Tools (MCP servers)",
    "Appearance",
    "Data folders",
]


def _hosted(
    qtbot: QtBot, arun, tmp_path: Path, window: tuple[int, int], theme: str
) -> tuple[QScrollArea, SettingsPage]:
    """The page as the window shows it, once its folders, engines and account are read."""
    apply_theme(theme)
    page = SettingsPage(SettingsStore(tmp_path / "settings.json"), log_dir=tmp_path / "logs")
    area = host(qtbot, page, window)

    async def settled() -> None:
        await page.hf_account.refresh_task
        await page.refresh_folders()
        await page.engines_box.refresh()
        await page.tools_box.refresh()
        await asyncio.sleep(0)  # the layout requests posted by the new texts

    arun(settled())
    QApplication.processEvents()
    return area, page


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("window", [WIDE, NARROW], ids=["1400x900", "900x650"])
def test_every_control_fits_and_the_page_scrolls(
    qtbot: QtBot, arun, tmp_path: Path, window: tuple[int, int], theme: str
) -> None:
    area, page = _hosted(qtbot, arun, tmp_path, window, theme)
    assert page.findChildren(QGroupBox) == []
    assert [s.title() for s in page.sections] == TITLES
    for section in page.sections:
        assert section.description(), f"{section.title()} has no description"
        assert section.description_label.isVisibleTo(section)
        assert section.property("section") is True

    # The page fits the page area: the sections scroll inside it, nothing sideways.
    assert page.height() <= area.viewport().height() + 1
    bar = page.sections_area.verticalScrollBar()
    assert bar.maximum() > 0, "the sections are taller than the window: they scroll"
    assert page.sections_area.horizontalScrollBar().maximum() == 0
    viewport = page.sections_area.viewport()

    controls = visible_controls(page)
    assert len(controls) >= 15
    assert_controls_whole(controls, page.sections, viewport)

    # The index is there when both fit, and gives its room to the sections otherwise.
    assert page.index.isVisible() is (window == WIDE)
    column = page.findChild(QWidget, "settingsColumn")
    assert column is not None
    assert column.width() <= 960
    if window == NARROW:
        assert column.width() >= viewport.width() - 2 * 24 - 4  # the whole width
        assert column.mapTo(page, QPoint(0, 0)).x() <= 24 + 2  # no room kept for the index


def test_the_index_scrolls_to_a_section_and_follows_the_scrolling(
    qtbot: QtBot, arun, tmp_path: Path
) -> None:
    _area, page = _hosted(qtbot, arun, tmp_path, WIDE, "light")
    index, bar, viewport = (
        page.index,
        page.sections_area.verticalScrollBar(),
        page.sections_area.viewport(),
    )
    assert [index.item(i).text() for i in range(index.count())] == TITLES
    assert index.currentRow() == 0 and bar.value() == 0

    def top_in_view(section: Section) -> int:
        return section.mapTo(viewport, QPoint(0, 0)).y()

    row = TITLES.index("Downloads")
    downloads = page.sections[row]
    item = index.visualItemRect(index.item(row)).center()
    qtbot.mouseClick(index.viewport(), Qt.MouseButton.LeftButton, pos=item)
    assert index.currentRow() == row and 0 < bar.value() < bar.maximum()
    assert 0 <= top_in_view(downloads) <= 24, "the chosen section is at the top"

    # The last sections cannot reach the top: the page scrolls to its end, and the
    # chosen one stays marked (rather than the one the end happens to show).
    index.setCurrentRow(TITLES.index("Appearance"))
    assert bar.value() == bar.maximum()
    assert index.currentRow() == TITLES.index("Appearance")
    appearance = page.sections[TITLES.index("Appearance")]
    assert 0 <= top_in_view(appearance) < viewport.height()

    # Another page sends the user to a section.
    assert page.show_section("Downloads") is downloads
    assert index.currentRow() == row and 0 <= top_in_view(downloads) <= 24

    # Scrolling by hand marks the section at the top.
    bar.setValue(0)
    assert index.currentRow() == 0
    bar.setValue(index.top_of(page.sections[1]) - 5)
    assert index.currentRow() == 0
    bar.setValue(index.top_of(page.sections[1]) + 5)
    assert index.currentRow() == 1
    bar.setValue(bar.maximum())
    assert index.currentRow() == len(TITLES) - 1


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_section_texts_meet_aa_on_theirpainted_background(
    qtbot: QtBot, arun, tmp_path: Path, theme: str
) -> None:
    _area, page = _hosted(qtbot, arun, tmp_path, WIDE, theme)
    checked: list[str] = []
    failures: list[str] = []
    for section in page.sections:
        image = section.grab().toImage()
        labels = [
            label
            for label in section.findChildren(QLabel)
            if label.isVisibleTo(section) and label.text() and label.pixmap().isNull()
        ]
        for label in labels:
            rect = QRect(label.mapTo(section, QPoint(0, 0)), label.size())
            background = painted_background(image, rect)
            color = label.palette().color(QPalette.ColorRole.WindowText).name()
            ratio = contrast_ratio(color, background)
            checked.append(label.text())
            if ratio < AA:
                failures.append(f"{label.text()[:40]!r}: {color} on {background} = {ratio:.2f}")
    assert not failures, "\n".join(failures)
    for expected in ("Downloads", "For all downloads together.", "Not logged in."):
        assert expected in checked
    assert sum(1 for s in page.sections if s.description() in checked) == len(TITLES)


def test_models_folders_show_a_list_and_a_message_only_when_there_is_one(
    qtbot: QtBot, arun, tmp_path: Path
) -> None:
    _area, page = _hosted(qtbot, arun, tmp_path, NARROW, "light")
    section = page.sections[TITLES.index("Models folders")]
    before = section.height()
    assert not page.folders_list.isVisible() and not page.folders_message.isVisible()
    assert not page.remove_folder_button.isEnabled()
    folder = tmp_path / "more-models"
    folder.mkdir()

    async def scenario() -> None:
        await page.add_folder(folder)
        assert page.folders_list.isVisible() and page.folders_list.count() == 1
        assert page.folders_message.isVisible()
        assert page.folders_message.text().startswith(f"Added {folder}")
        await arun.wait_until(lambda: section.height() > before, 5, "the section to grow")
        page.folders_list.setCurrentRow(0)
        assert page.remove_folder_button.isEnabled()
        page.remove_folder_button.click()
        await arun.wait_until(lambda: page.folders_list.count() == 0, 10, "the removal")
        assert not page.folders_list.isVisible()
        assert page.folders_message.text() == f"Removed {folder} (its files stay on disk)."
        assert folder.is_dir()

    arun(scenario())


def test_the_engines_table_is_as_tall_as_its_rows(qtbot: QtBot, arun, tmp_path: Path) -> None:
    """A theme applied after the table was measured (Qt's own look, then the app's
    stylesheet with its padded header) must still leave room for every row."""
    registry = EngineRegistry()
    registry.add("gpu-box", "http://10.0.0.5:8000")
    registry.add("studio", "http://127.0.0.1:1234")
    page = SettingsPage(SettingsStore(tmp_path / "settings.json"), log_dir=tmp_path / "logs")
    qtbot.addWidget(page)
    page.resize(WIDE[0] - RAIL, WIDE[1] - CHROME)
    page.show()
    table = page.engines_box.table
    arun(arun.wait_until(lambda: table.rowCount() == 2 and table.isVisible(), 10, "the engines"))
    QApplication.processEvents()
    unstyled = table.horizontalHeader().height()
    apply_theme("dark")
    arun(arun.wait_until(lambda: table.horizontalHeader().height() > unstyled, 5, "the restyle"))

    def last_row_shown() -> bool:
        return table.visualItemRect(table.item(1, 0)).bottom() < table.viewport().height()

    arun(arun.wait_until(last_row_shown, 5, "room for the last row"))
    assert table.verticalScrollBar().maximum() == 0
