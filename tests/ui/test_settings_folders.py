"""Settings' Folders box: the real folders, each opened in the file manager by its button."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtWidgets import QPushButton

from hearth.config.paths import AppPaths
from hearth.library import Library
from hearth.ui.app_settings import SettingsStore
from hearth.ui.pages.settings.page import SettingsPage

pytestmark = pytest.mark.ui


def _page(tmp_path: Path, opened: list[QUrl], ok: bool = True) -> SettingsPage:
    paths = AppPaths(tmp_path / "data", tmp_path / "config")
    store = SettingsStore(tmp_path / "elsewhere" / "settings.json")

    def opener(url: QUrl) -> bool:
        opened.append(url)
        return ok

    return SettingsPage(store, Library(paths), opener=opener, log_dir=tmp_path / "state" / "log")


def test_each_button_opens_its_folder_creating_it_first(qtbot, arun, tmp_path):
    opened: list[QUrl] = []
    page = _page(tmp_path, opened)
    qtbot.addWidget(page)
    expected = {
        "data": tmp_path / "data",
        "config": tmp_path / "elsewhere",  # the settings file really in use
        "logs": tmp_path / "state" / "log",
        "models": tmp_path / "data" / "models",
    }
    box = page.folders_box
    assert list(box.buttons) == ["data", "config", "logs", "models"]
    for key, path in expected.items():
        assert box.fields[key].text() == str(path)
        assert box.fields[key].isReadOnly()
        assert not path.exists()

    signals: list[tuple[str, bool]] = []
    box.opened.connect(lambda key, ok: signals.append((key, ok)))

    async def scenario() -> None:
        for n, (key, path) in enumerate(expected.items(), start=1):
            button = box.buttons[key]
            assert button.text() == "Show in file manager"
            button.click()
            await arun.wait_until(lambda n=n: len(signals) == n, 10, f"{key} opened")
            assert signals[-1] == (key, True)
            assert opened[-1].isLocalFile()
            assert Path(opened[-1].toLocalFile()) == path
            assert path.is_dir()

    arun(scenario())
    assert [Path(u.toLocalFile()) for u in opened] == list(expected.values())
    assert box.message.text() == ""


def test_buttons_have_accessible_names(qtbot, qloop, tmp_path):
    page = _page(tmp_path, [])
    qtbot.addWidget(page)
    names = {b.accessibleName() for b in page.folders_box.findChildren(QPushButton)}
    for folder in ("data", "settings", "logs", "models"):
        assert f"Show the {folder} folder in the file manager" in names
    assert page.data_field.accessibleName() == "Data folder location"


def test_failures_are_said_not_raised(qtbot, arun, tmp_path):
    opened: list[QUrl] = []
    page = _page(tmp_path, opened, ok=False)
    qtbot.addWidget(page)
    box = page.folders_box
    assert arun(box.show_folder("data")) is False
    assert "No file manager could open" in box.message.text()

    # A file where a folder should be: mkdir fails (as it would on a read-only disk).
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    page2 = SettingsPage(
        SettingsStore(blocker / "settings.json"),
        Library(AppPaths(tmp_path / "d", tmp_path / "c")),
        opener=lambda url: opened.append(url) or True,
    )
    qtbot.addWidget(page2)
    count = len(opened)
    assert arun(page2.folders_box.show_folder("config")) is False
    assert len(opened) == count
    assert "Could not create" in page2.folders_box.message.text()
