"""The top row: actions, the Chat page's panel toggles and the model picker in one row.

The toggles show on the Chat page only, and hiding them does not move the picker;
a narrow window shows the actions as icons (names in tooltips).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolButton
from pytestqt.qtbot import QtBot

from hearth.ui.shell.main_window import MainWindow
from hearth.ui.welcome import llama_backend

pytestmark = pytest.mark.ui


def test_one_row_toggles_on_chat_only_and_icons_when_narrow(
    qtbot: QtBot, qloop: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        llama_backend, "probe_backend", lambda _p: llama_backend.BackendInfo("CPU", False, "CPU")
    )
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    window = MainWindow(log_dir=tmp_path / "logs", chats_db=tmp_path / "chats.db")
    qtbot.addWidget(window)
    window.resize(1300, 800)
    window.show()
    bar = window.top_bar
    picker = window.model_bar.picker_button
    qtbot.waitUntil(lambda: bar.chat.isVisible() and picker.isVisible())
    # The actions and the picker share one row.
    assert bar.main.geometry().center().y() == window.model_bar.geometry().center().y()
    at_chat = picker.mapTo(window, picker.rect().topLeft())

    assert bar.divider.isVisible()  # the actions and the Chat page's toggles: two groups
    assert bar.main.geometry().right() < bar.divider.x() < bar.chat.geometry().left()
    window.show_page("Discover")
    qtbot.waitUntil(lambda: not bar.chat.isVisible())
    assert not bar.divider.isVisible()
    qtbot.wait(50)  # a layout pass, had the picker been going to move
    assert picker.mapTo(window, picker.rect().topLeft()) == at_chat
    window.show_page("Chat")
    qtbot.waitUntil(bar.chat.isVisible)

    buttons = bar.main.findChildren(QToolButton) + bar.chat.findChildren(QToolButton)
    texted = [b for b in buttons if b.defaultAction() is not None]
    assert texted and all(
        b.toolButtonStyle() is Qt.ToolButtonStyle.ToolButtonTextBesideIcon for b in texted
    )
    window.resize(900, 650)
    qtbot.waitUntil(
        lambda: all(b.toolButtonStyle() is Qt.ToolButtonStyle.ToolButtonIconOnly for b in texted)
    )
    assert all(b.toolTip() for b in texted)  # the names stay reachable
