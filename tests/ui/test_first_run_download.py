"""The Welcome window's "Download": from first launch to a streaming reply in two
clicks, against the local fake Hub. The card's button hands its pick to the quick
start (the empty Chat page's "Get a recommended model"), which reads the file name from
the repo's listing, downloads it with the app's download manager and loads it."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QApplication, QWidget
from pytestqt.qtbot import QtBot

from fake_hub import FakeHub
from hearth.config.paths import AppPaths
from hearth.hardware import SystemMemory
from hearth.hub.picks import Pick, PicksFile
from hearth.supervisor import WorkerState
from hearth.ui import first_run
from hearth.ui.chat_turns import ChatSettings
from hearth.ui.main_window import MainWindow
from hearth.ui.pages.services import AppServices
from hub_testing import FAST_RETRY, isolated_hf  # noqa: F401 - autouse: a file keyring

pytestmark = pytest.mark.ui

REPO = "hearth/tiny-chat-GGUF"
FILE = "tiny-chat-Q8_0.gguf"
GIB = 1024**3


class ClickCounter(QObject):
    """Counts mouse clicks delivered anywhere in the app."""

    def __init__(self) -> None:
        super().__init__()
        self.clicks = 0

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.MouseButtonRelease and isinstance(watched, QWidget):
            self.clicks += 1
        return False


def test_download_on_a_welcome_card_gets_and_loads_that_model(
    qtbot: QtBot, arun, tmp_path: Path, tiny_model_q8: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        first_run, "probe_backend", lambda _p: first_run.BackendInfo("CPU", False, "CPU")
    )
    data = tiny_model_q8.read_bytes()
    tiny = Pick(
        "Tiny chat", "chat", REPO, "Q8_0", len(data), 1024 * 1024, description="A test model."
    )
    big = Pick("Big code", "coding", "hearth/big", "Q8_0", 40 * GIB, GIB, description="Won't fit.")
    table = PicksFile({"chat": "Chat", "coding": "Coding"}, (tiny, big))
    monkeypatch.setattr(first_run, "default_picks", lambda: table)
    with FakeHub() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        hub.add_repo(REPO, {FILE: data})
        services = AppServices(
            AppPaths(tmp_path / "data", tmp_path / "config").ensure(),
            download_options={
                "retry": FAST_RETRY,
                "reserve_bytes": 0,
                "token_provider": lambda: None,
            },
            system=SystemMemory(8 * GIB, 6 * GIB, 4, 8),
        )
        window = MainWindow(
            log_dir=tmp_path / "logs",
            chats_db=tmp_path / "chats.db",
            services=services,
            chat_settings=ChatSettings(max_tokens=24),
        )
        qtbot.addWidget(window)
        window.resize(1100, 750)
        window.show()
        welcome = window.extras.maybe_show_first_run()
        assert welcome is not None
        counter = ClickCounter()
        QApplication.instance().installEventFilter(counter)
        try:

            async def scenario() -> None:
                await arun.wait_until(lambda: bool(welcome.cards), 30, "the cards")
                assert [c.pick for c in welcome.cards] == [tiny, big]
                assert not welcome.download_buttons[1].isEnabled()  # 40 GiB won't fit
                # 1. "Download" on the tiny model's card: the window closes, Chat shows.
                qtbot.mouseClick(welcome.download_buttons[0], Qt.MouseButton.LeftButton)
                assert not welcome.isVisible()
                assert window.pages.currentIndex() == 0  # Chat: the progress shows there
                await arun.wait_until(
                    lambda: window.supervisor.status.state is WorkerState.READY,
                    120,
                    "the chosen model to download and load",
                )
                assert window.quick_start.chosen == tiny
                assert window.supervisor.model_path is not None
                assert window.supervisor.model_path.read_bytes() == data
                # 2. Send: the reply streams.
                view = window.chat_view
                qtbot.keyClicks(view.input, "Hello!")
                qtbot.mouseClick(view.send_button, Qt.MouseButton.LeftButton)
                await arun.wait_until(lambda: view.streamed_chars > 0, 60, "streamed text")

            arun(scenario())
            assert counter.clicks == 2
            arun(window.chat.task)  # type: ignore[arg-type]
        finally:
            QApplication.instance().removeEventFilter(counter)
