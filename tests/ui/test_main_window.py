"""The real main window, offscreen, driving a real worker subprocess on a tiny model."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import psutil
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog
from pytestqt.qtbot import QtBot

from gguf_factory import EOS_ID
from hearth.supervisor import LoadOptions, WorkerState
from hearth.ui.chat.session import ChatSettings
from hearth.ui.shell.main_window import MainWindow

pytestmark = pytest.mark.ui


def _worker_children() -> list[psutil.Process]:
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "--worker" in child.cmdline() and child.status() != psutil.STATUS_ZOMBIE:
                found.append(child)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return found


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture
def window(qtbot: QtBot, tmp_path: Path) -> MainWindow:
    win = MainWindow(
        log_dir=tmp_path / "logs",
        load_options=LoadOptions(n_ctx=8192, n_parallel=2),
        # The tiny model has random weights: unbiased, it samples its end-of-sequence
        # token at random, so a reply could end on its own before the test stops it
        # (outcome "done", not "stopped") or after too few tokens to stream over
        # several repaints. That made test_stream_stop_and_close fail now and then in
        # full runs. EOS is banned and the seed fixed, so every run sees the same reply.
        chat_settings=ChatSettings(
            temperature=0.8, max_tokens=300, seed=1234, logit_bias={EOS_ID: -100.0}
        ),
    )
    qtbot.addWidget(win)  # closed at teardown; closeEvent then stops any worker
    win.show()
    return win


async def _open_and_wait_ready(arun, window: MainWindow, model: Path) -> int:
    window.open_model(model)
    await arun.wait_until(
        lambda: window.supervisor.status.state in (WorkerState.READY, WorkerState.ERROR),
        120,
        "the worker to load the model",
    )
    assert window.supervisor.status.state is WorkerState.READY, window.supervisor.status
    assert window.status_label.text().startswith("Ready: ")
    assert window.chat_view.send_button.isEnabled()
    assert not window.chat_view.stop_button.isEnabled()
    assert not window.banner.isVisible()
    proc = window.supervisor.process
    assert proc is not None and proc.pid is not None
    return proc.pid


def _assistant_text(window: MainWindow) -> str:
    """The last reply's text as shown (under its heading: the model's name)."""
    text = window.chat_view.transcript_text()
    _, sep, tail = text.rpartition(f"{window.supervisor.model_id}\n")
    return tail if sep else ""


async def _close(arun, window: MainWindow, pid: int) -> None:
    closed: list[bool] = []
    window.closed.connect(lambda: closed.append(True))
    window.close()
    await arun.wait_until(lambda: closed, 30, "the window to close")
    await arun.wait_until(lambda: _gone(pid), 10, "the worker process to end")
    assert not _worker_children()


def test_stream_stop_and_close(qtbot: QtBot, arun, window: MainWindow, tiny_model_q8: Path):
    view, chat = window.chat_view, window.chat
    outcomes: list[str] = []
    chat.generation_finished.connect(outcomes.append)

    async def scenario() -> None:
        pid = await _open_and_wait_ready(arun, window, tiny_model_q8)

        # 1. A full turn streams in over several repaints.
        lengths: list[int] = []
        # The transcript renders markdown (its plain text may shrink when "**" closes),
        # so growth is measured on the text the view has been fed.
        view.transcript_updated.connect(lambda: lengths.append(view.streamed_chars))
        # Long enough to span several 16 ms frames: on a quiet machine the tiny model
        # writes 600 tokens within one or two frames (the view then rightly flushes once).
        chat.settings.max_tokens = 1800
        qtbot.keyClicks(view.input, "Hello there")
        qtbot.keyClick(view.input, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
        assert view.input.toPlainText() == ""
        assert view.generating and view.stop_button.isEnabled()
        assert not view.send_button.isEnabled()
        # 1800 tokens with markdown rendering: generous for a loaded 2-core machine (the
        # wait ends as soon as the reply does)
        await arun.wait_until(lambda: outcomes, 180, "the first reply")
        assert outcomes == ["done"]
        reply = chat.conversation[-1]
        assert reply["role"] == "assistant" and reply["content"]
        assert [m["role"] for m in chat.conversation] == ["user", "assistant"]
        growth = [n for n in lengths if n > 0]
        assert len(growth) >= 3, lengths  # text arrived over several updates
        assert growth == sorted(growth)
        assert view.flush_count >= 2
        assert not view.stop_button.isEnabled() and view.send_button.isEnabled()

        # 2. Stop a long generation mid-way: partial reply stays, window stays usable.
        chat.settings.max_tokens = 1000  # with the 1800 above, within a slot's 4096
        view.input.setPlainText("Tell me a very long story")
        view.send_button.click()
        await arun.wait_until(lambda: len(_assistant_text(window)) > 20, 30, "streamed text")
        assert view.generating
        view.stop_button.click()
        await arun.wait_until(lambda: len(outcomes) == 2, 10, "the stop to take effect")
        assert outcomes[-1] == "stopped"
        assert not view.stop_button.isEnabled() and view.send_button.isEnabled()
        partial = chat.conversation[-1]
        assert partial["role"] == "assistant" and partial["content"]
        assert view.streamed_chars == len(partial["content"])  # all of it was shown
        assert "[stopped]" in view.transcript_text()
        stats = view.stats_label.text()  # a stopped reply shows its stats too
        assert "tokens" in stats and "tok/s" in stats and stats.endswith("stopped"), stats

        # 3. Send again on the same worker.
        chat.settings.max_tokens = 16
        view.input.setPlainText("And again")
        view.send_button.click()
        await arun.wait_until(lambda: len(outcomes) == 3, 60, "the third reply")
        assert outcomes[-1] == "done"
        assert [m["role"] for m in chat.conversation] == ["user", "assistant"] * 3
        assert window.supervisor.process is not None and window.supervisor.process.pid == pid

        # 4. Closing the window stops the worker.
        await _close(arun, window, pid)

    arun(scenario())


def test_crash_banner_and_restart(arun, window: MainWindow, tiny_model_q8: Path):
    async def scenario() -> None:
        pid = await _open_and_wait_ready(arun, window, tiny_model_q8)

        os.kill(pid, signal.SIGKILL)
        await arun.wait_until(window.banner.isVisible, 15, "the crash banner")
        assert window.supervisor.status.state is WorkerState.CRASHED
        assert window.supervisor.status.exit_code == -signal.SIGKILL
        assert window.restart_button.isVisible() and window.restart_button.text() == "Restart"
        assert "crashed" in window.status_label.text()
        assert "exit code" in window.banner_label.text()
        assert not window.chat_view.send_button.isEnabled()

        window.restart_button.click()
        await arun.wait_until(
            lambda: window.supervisor.status.state in (WorkerState.READY, WorkerState.ERROR),
            120,
            "the restart",
        )
        assert window.supervisor.status.state is WorkerState.READY, window.supervisor.status
        assert not window.banner.isVisible()
        assert window.chat_view.send_button.isEnabled()
        new_pid = window.supervisor.process.pid  # type: ignore[union-attr]
        assert new_pid != pid

        await _close(arun, window, new_pid)

    arun(scenario())


def test_file_open_adds_to_the_library_and_the_meter_runs(
    qtbot: QtBot,
    arun,
    window: MainWindow,
    tiny_model_q8: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """File > Open imports the file in place before its Load dialog; while a model is
    loaded the status bar shows the worker's memory and CPU, and the top bar its size."""
    picked = tmp_path / "elsewhere" / "picked-tiny.Q8_0.gguf"
    picked.parent.mkdir()
    picked.write_bytes(tiny_model_q8.read_bytes())
    monkeypatch.setattr(
        QFileDialog, "getOpenFileName", staticmethod(lambda *_a, **_k: (str(picked), ""))
    )
    library = window.services.library

    async def scenario() -> None:
        window.open_action.trigger()
        await arun.wait_until(lambda: window.extras.load_dialog is not None, 10, "Load dialog")
        dialog = window.extras.load_dialog
        assert dialog is not None and dialog.model_path == picked
        assert any(m.path == picked for m in library.models())
        dialog.reject()

        pid = await _open_and_wait_ready(arun, window, tiny_model_q8)
        meter = window.status_view.meter
        await arun.wait_until(lambda: meter.last is not None, 20, "a meter sample")
        assert meter.isVisible() and "RAM" in meter.text() and "CPU" in meter.text()
        assert meter.last is not None and meter.last.worker_rss > 1_000_000
        chips = window.model_bar.chips  # the loaded model's chip: "tiny · 23.0 MiB · pinned"
        await arun.wait_until(chips.isVisible, 10, "the model's chip")
        assert "iB · pinned" in chips.texts()[0], chips.texts()
        await _close(arun, window, pid)

    arun(scenario())


def test_switching_pages_by_code_moves_focus_as_a_click_on_the_rail_would(
    qtbot: QtBot, arun, window: MainWindow
) -> None:
    """Qt hands the focus of a page being hidden to the next page's first button, which
    then wears a focus ring nobody asked for; Chat puts the cursor in the message box."""
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    window.chat_view.input.setFocus()
    qtbot.waitUntil(window.chat_view.input.hasFocus)
    for name in ("Library", "Downloads", "Settings", "Server"):
        window.show_page(name)
        assert window.nav.hasFocus(), name
    window.show_page("Chat")
    assert window.chat_view.input.hasFocus()
