"""From first launch to a streaming reply in few clicks, against the local fake Hub.

Three from the empty Chat page: close the Welcome window, "Get a recommended model" (it
chooses the first-run pick that fits, reads its file name from the repo's listing,
downloads it and loads it), then Send. Two from the Welcome window: a card's Download
hands its pick to the same quick start, then Send."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox
from pytestqt.qtbot import QtBot

from click_counter import ClickCounter
from fake_hub import FakeHub
from hearth.config.paths import AppPaths
from hearth.hardware import SystemMemory
from hearth.hub.picks import Pick, PicksFile
from hearth.supervisor import WorkerState
from hearth.ui.chat.turns import ChatSettings
from hearth.ui.machine_speed import MachineSpeed
from hearth.ui.pages.services import AppServices
from hearth.ui.shell.main_window import MainWindow
from hearth.ui.welcome import first_run, llama_backend
from hub_testing import FAST_RETRY, isolated_hf  # noqa: F401 - autouse: a file keyring

pytestmark = pytest.mark.ui

REPO = "hearth/tiny-chat-GGUF"
FILE = "tiny-chat-Q8_0.gguf"
GIB = 1024**3


def _window(
    qtbot: QtBot, tmp_path: Path, system: SystemMemory, *, max_tokens: int | None = None
) -> MainWindow:
    services = AppServices(
        AppPaths(tmp_path / "data", tmp_path / "config").ensure(),
        download_options={"retry": FAST_RETRY, "reserve_bytes": 0, "token_provider": lambda: None},
        system=system,
    )
    window = MainWindow(
        log_dir=tmp_path / "logs",
        chats_db=tmp_path / "chats.db",
        services=services,
        chat_settings=ChatSettings(max_tokens=max_tokens),
    )
    qtbot.addWidget(window)
    window.discover_page.speed = MachineSpeed(ram_bps=20e9)  # no measuring in this test
    return window


def _cpu_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        llama_backend, "probe_backend", lambda _p: llama_backend.BackendInfo("CPU", False, "CPU")
    )


async def _streams_a_reply(qtbot: QtBot, arun, window: MainWindow) -> None:
    """The last click: type a question and Send; the reply streams."""
    view = window.chat_view
    qtbot.keyClicks(view.input, "Hello!")
    qtbot.mouseClick(view.send_button, Qt.MouseButton.LeftButton)
    await arun.wait_until(lambda: view.streamed_chars > 0, 60, "streamed text")
    # The reply finishes on this same run of the loop: a task left in flight across two
    # runs can be woken by Qt between them, with no running asyncio loop.
    assert window.chat.task is not None
    await window.chat.task


async def _loaded(arun, window: MainWindow, data: bytes) -> None:
    await arun.wait_until(
        lambda: window.supervisor.status.state is WorkerState.READY,
        120,
        "the recommended model to download and load",
    )
    assert window.supervisor.model_path is not None
    assert window.supervisor.model_path.read_bytes() == data


def test_three_clicks_from_first_launch_to_a_streaming_reply(
    qtbot: QtBot,
    arun,
    tmp_path: Path,
    tiny_model_q8: Path,
    monkeypatch: pytest.MonkeyPatch,
    click_counter: ClickCounter,
) -> None:
    _cpu_backend(monkeypatch)
    data = tiny_model_q8.read_bytes()
    with FakeHub() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        hub.add_repo(REPO, {FILE: data})
        # No GPU: the big picks don't fit.
        window = _window(qtbot, tmp_path, SystemMemory(8 * GIB, 6 * GIB, 4, 8), max_tokens=24)
        # Picks as the table has them: a repo and a quant, no file name (the listing
        # gives it), except the huge one, which is never listed (it won't fit).
        too_big = Pick("Huge", "chat", "hearth/huge", "Q8_0", 40 * GIB, GIB, file="huge-Q8_0.gguf")
        tiny = Pick("Tiny chat", "chat", REPO, "Q8_0", len(data), 1024 * 1024, first_run=True)
        window.quick_start.picks = (too_big, tiny)
        window.resize(1100, 750)
        window.show()
        welcome = window.extras.maybe_show_first_run()  # what app.py does at start
        assert welcome is not None and welcome.isVisible()
        view = window.chat_view

        async def scenario() -> None:
            # 1. Close the Welcome window.
            box = welcome.findChild(QDialogButtonBox)
            qtbot.mouseClick(
                box.button(QDialogButtonBox.StandardButton.Close), Qt.MouseButton.LeftButton
            )
            assert not welcome.isVisible()
            # 2. "Get a recommended model": the tiny one (the huge one won't fit).
            assert view.showing_empty_state
            qtbot.mouseClick(view.empty_state.card("recommendedCard"), Qt.MouseButton.LeftButton)
            await _loaded(arun, window, data)
            assert window.quick_start.chosen == tiny
            listed = [r.path for r in hub.requests if r.path.startswith("/api/models/")]
            assert listed and all(REPO in p for p in listed)  # the tiny one's listing
            # 3. Send.
            await _streams_a_reply(qtbot, arun, window)

        arun(scenario())
        assert click_counter.clicks == 3


def test_download_on_a_welcome_card_gets_and_loads_that_model_in_two_clicks(
    qtbot: QtBot,
    arun,
    tmp_path: Path,
    tiny_model_q8: Path,
    monkeypatch: pytest.MonkeyPatch,
    click_counter: ClickCounter,
) -> None:
    """A card's Download hands its pick to the quick start: the window closes, Chat
    shows the progress, the model loads when done."""
    _cpu_backend(monkeypatch)
    data = tiny_model_q8.read_bytes()
    tiny = Pick(
        "Tiny chat", "chat", REPO, "Q8_0", len(data), 1024 * 1024, description="A test model."
    )
    big = Pick("Big code", "coding", "hearth/big", "Q8_0", 40 * GIB, GIB, description="Won't fit.")
    monkeypatch.setattr(
        first_run,
        "default_picks",
        lambda: PicksFile({"chat": "Chat", "coding": "Coding"}, (tiny, big)),
    )
    with FakeHub() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        hub.add_repo(REPO, {FILE: data})
        window = _window(qtbot, tmp_path, SystemMemory(8 * GIB, 6 * GIB, 4, 8), max_tokens=24)
        window.resize(1100, 750)
        window.show()
        welcome = window.extras.maybe_show_first_run()
        assert welcome is not None

        async def scenario() -> None:
            await arun.wait_until(lambda: bool(welcome.cards), 30, "the cards")
            assert [c.pick for c in welcome.cards] == [tiny, big]
            assert not welcome.download_buttons[1].isEnabled()  # 40 GiB won't fit
            # 1. "Download" on the tiny model's card: the window closes, Chat shows.
            qtbot.mouseClick(welcome.download_buttons[0], Qt.MouseButton.LeftButton)
            assert not welcome.isVisible()
            assert window.pages.currentIndex() == 0  # Chat: the progress shows there
            await _loaded(arun, window, data)
            assert window.quick_start.chosen == tiny
            # 2. Send.
            await _streams_a_reply(qtbot, arun, window)

        arun(scenario())
        assert click_counter.clicks == 2


def test_nothing_fits_opens_discover_and_nothing_downloads(
    qtbot: QtBot, arun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cpu_backend(monkeypatch)
    with FakeHub() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)  # Discover asks for trending repos
        window = _window(qtbot, tmp_path, SystemMemory(GIB, GIB // 2, 2, 2))
        window.quick_start.picks = (Pick("Big", "chat", REPO, "Q8_0", 4 * GIB, GIB),)
        said: list[str] = []
        window.quick_start.status.connect(said.append)
        arun(window.quick_start.start(), timeout=30)
        assert said[-1] == "None of the recommended models fits here: Discover has smaller ones."
        assert window.pages.currentWidget() is window.discover_page
        assert window.quick_start.chosen is None and not window.services.downloads.downloads()
        assert not [r for r in hub.requests if r.path.startswith(f"/api/models/{REPO}")]


def test_a_pick_the_hub_lacks_says_so_and_downloads_nothing(
    qtbot: QtBot, arun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing decides the file: a repo that no longer has the pick's quant is a
    clear message on the empty Chat page, not a download that 404s."""
    _cpu_backend(monkeypatch)
    with FakeHub() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        hub.add_repo(REPO, {"tiny-chat-F16.gguf": b"GGUF" + bytes(1000)})
        window = _window(qtbot, tmp_path, SystemMemory(8 * GIB, 6 * GIB, 4, 8))
        pick = Pick("Tiny chat", "chat", REPO, "Q8_0", 1000, 1024, file=FILE, first_run=True)
        window.quick_start.picks = (pick,)
        said: list[str] = []
        window.quick_start.status.connect(window.chat_view.empty_state.text_label.setText)
        window.quick_start.status.connect(said.append)
        arun(window.quick_start.start(), timeout=30)
        assert window.quick_start.chosen == pick
        assert said[-1].startswith("Could not get Tiny chat: ")
        assert f"{REPO} has no complete Q8_0 GGUF file" in said[-1]
        assert window.chat_view.empty_state.text_label.text() == said[-1]
        assert not window.services.downloads.downloads()
        assert not [r for r in hub.requests if "/resolve/" in r.path]
