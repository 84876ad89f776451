"""The top bar's model picker: Ctrl+L opens a searchable list of library models with
fit chips; choosing one opens the Load dialog for it; the bar shows the loaded model
and Eject."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from hearth.config.paths import AppPaths
from hearth.supervisor import WorkerState, WorkerStatus
from hearth.ui.pages.services import AppServices
from hearth.ui.shell.main_window import MainWindow

pytestmark = pytest.mark.ui


@pytest.fixture
def window(qtbot: QtBot, arun, tmp_path: Path, tiny_model_q8: Path) -> MainWindow:
    paths = AppPaths(tmp_path / "data", tmp_path / "config").ensure()
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy(tiny_model_q8, folder / "zebra-tiny.Q8_0.gguf")
    shutil.copy(tiny_model_q8, folder / "giraffe-tiny.Q8_0.gguf")
    services = AppServices(paths)
    services.library.add_folder(folder)
    win = MainWindow(log_dir=tmp_path / "logs", chats_db=tmp_path / "chats.db", services=services)
    qtbot.addWidget(win)
    win.show()
    return win


def test_ctrl_l_search_choose_opens_the_load_dialog(qtbot: QtBot, arun, window: MainWindow) -> None:
    picker = window.model_picker
    assert window.model_bar.picker_button.text().startswith("Select a model")
    assert not window.model_bar.eject_button.isEnabled()

    qtbot.keyClick(window.chat_view.input, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)
    assert picker.isVisible()
    assert picker.loaded is not None
    arun(picker.loaded)
    assert sorted(picker.visible_names()) == [
        "models/giraffe-tiny.Q8_0.gguf",
        "models/zebra-tiny.Q8_0.gguf",
    ]
    # Every model has its fit chip for this machine.
    assert all(picker.chip(i).text() not in ("", "Unknown") for i in range(2))

    qtbot.keyClicks(picker.search, "zebra")
    assert picker.visible_names() == ["models/zebra-tiny.Q8_0.gguf"]
    qtbot.keyClick(picker.search, Qt.Key.Key_Return)
    assert not picker.isVisible()
    dialog = window.extras.load_dialog
    assert dialog is not None and dialog.model_path.name == "zebra-tiny.Q8_0.gguf"
    dialog.reject()


def test_the_bar_shows_the_model_its_state_and_memory(window: MainWindow) -> None:
    bar = window.model_bar
    bar.set_status(WorkerStatus(WorkerState.LOADING, 0.42, "zebra-tiny"))
    assert bar.picker_button.text() == "zebra-tiny  ·  Loading 42%"
    assert bar.eject_button.isEnabled()
    bar.set_status(WorkerStatus(WorkerState.READY, None, "zebra-tiny"))
    bar.set_memory("41.2 MB")
    assert bar.picker_button.text() == "zebra-tiny  ·  Ready  ·  41.2 MB"
