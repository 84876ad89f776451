"""The chat against a real worker: history, stop/regenerate, edit, search, export, crash."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QGuiApplication
from pytestqt.qtbot import QtBot

from hearth.chats import ChatStore, MessageStatus
from hearth.supervisor import LoadOptions, WorkerState
from hearth.ui.chat.turns import ChatSettings
from hearth.ui.shell.crash_recovery import RESTARTING
from hearth.ui.shell.main_window import MainWindow

pytestmark = pytest.mark.ui


@pytest.fixture
def window(qtbot: QtBot, tmp_path: Path) -> MainWindow:
    win = MainWindow(
        log_dir=tmp_path / "logs",
        load_options=LoadOptions(n_ctx=2048, n_parallel=2),
        chat_settings=ChatSettings(temperature=0.8, max_tokens=40),
        chats_db=tmp_path / "chats.db",
    )
    qtbot.addWidget(win)
    win.show()
    return win


async def _ready(arun, window: MainWindow, model: Path) -> None:
    window.open_model(model)
    await arun.wait_until(
        lambda: window.supervisor.status.state in (WorkerState.READY, WorkerState.ERROR),
        120,
        "the model to load",
    )
    assert window.supervisor.status.state is WorkerState.READY, window.supervisor.status


async def _turn(arun, window: MainWindow, outcomes: list[str], start) -> str:
    n = len(outcomes)
    assert start() is not None
    await arun.wait_until(lambda: len(outcomes) > n, 60, "the turn to finish")
    return outcomes[-1]


def _rows(window: MainWindow) -> list:
    cid = window.chat.conversation_id
    assert cid is not None
    return window.chats_db.sync(lambda s: s.messages(cid))


def test_chat_history_regenerate_edit_search_export(
    qtbot: QtBot, arun, window: MainWindow, tiny_model_q8: Path, tmp_path: Path
) -> None:
    chat, view, sidebar = window.chat, window.chat_view, window.sidebar
    outcomes: list[str] = []
    chat.generation_finished.connect(outcomes.append)

    async def scenario() -> None:
        await _ready(arun, window, tiny_model_q8)

        # Send: the streamed reply is saved with its stats; the footer shows them.
        qtbot.keyClicks(view.input, "Tell me about zebras")
        qtbot.keyClick(view.input, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
        assert await _turn(arun, window, outcomes, lambda: chat.task) == "done"
        rows = _rows(window)
        assert [(r.role, r.status) for r in rows] == [
            ("user", MessageStatus.COMPLETE),
            ("assistant", MessageStatus.COMPLETE),
        ]
        assert rows[0].content == "Tell me about zebras"
        assert rows[1].content == chat.turns[-1].content and rows[1].content
        assert rows[1].stats.completion_tokens == 40
        assert rows[1].stats.tokens_per_s and rows[1].stats.ttft_ms is not None
        footer = view.stats_label.text()
        assert "tok/s" in footer and "TTFT" in footer and "/ 2048" in footer
        await arun.wait_until(lambda: sidebar.shown_ids() == [chat.conversation_id], 5, "list")
        assert sidebar.list.item(0).text().startswith("Tell me about zebras")
        assert view.regenerate_button.isEnabled()

        # Stop mid-way: the partial reply is kept and marked interrupted.
        chat.settings.max_tokens = 1500
        view.input.setPlainText("A long story please")
        view.send_button.click()
        await arun.wait_until(lambda: view.streamed_chars > 20, 30, "streamed text")
        qtbot.keyClick(view.input, Qt.Key.Key_Escape)
        await arun.wait_until(lambda: len(outcomes) == 2, 10, "the stop")
        assert outcomes[-1] == "stopped"
        stopped = _rows(window)[-1]
        assert stopped.status is MessageStatus.INTERRUPTED and stopped.detail == "Stopped"
        assert stopped.content and stopped.content == chat.turns[-1].content

        # Regenerate: the last reply is replaced (same conversation, a new row).
        chat.settings.max_tokens = 24
        assert await _turn(arun, window, outcomes, chat.regenerate) == "done"
        rows = _rows(window)
        assert [r.role for r in rows] == ["user", "assistant"] * 2
        assert rows[-1].status is MessageStatus.COMPLETE and rows[-1].stats.completion_tokens == 24
        assert "[stopped]" not in view.transcript_text()

        # Edit and resend the first question: everything after it is replaced.
        view.edit_requested.emit(0)
        assert view.input.toPlainText() == "Tell me about zebras"
        assert view.edit_banner.isVisible()
        view.input.setPlainText("Tell me about giraffes instead")
        n = len(outcomes)
        view.send_button.click()
        await arun.wait_until(lambda: len(outcomes) > n, 60, "the resent turn")
        rows = _rows(window)
        assert [r.role for r in rows] == ["user", "assistant"]
        assert rows[0].content == "Tell me about giraffes instead"
        assert [t.content for t in chat.turns] == [r.content for r in rows]
        assert not view.edit_banner.isVisible()

        # A second conversation; then search the history (Ctrl+K focuses the box).
        first_id = chat.conversation_id
        window.new_chat_action.trigger()
        assert view.transcript_text() == "" and chat.conversation_id is None
        assert await _turn(arun, window, outcomes, lambda: chat.send("Pasta recipes")) == "done"
        second_id = chat.conversation_id
        await arun.wait_until(lambda: len(sidebar.shown_ids()) == 2, 5, "two chats")
        assert sidebar.shown_ids() == [second_id, first_id]  # most recent first
        window.search_action.trigger()
        assert sidebar.search_box.hasFocus()
        qtbot.keyClicks(sidebar.search_box, "giraf")
        await arun.wait_until(lambda: sidebar.shown_ids() == [first_id], 5, "search results")
        assert "[giraffes]" in sidebar.list.item(0).text()
        sidebar.search_box.clear()
        await arun.wait_until(lambda: len(sidebar.shown_ids()) == 2, 5, "full list")

        # Open the first chat from the list: its transcript comes back.
        sidebar._open_item(sidebar.list.item(1))
        await arun.wait_until(lambda: chat.conversation_id == first_id, 5, "open")
        assert "giraffes instead" in view.transcript_text()
        assert view.regenerate_button.isEnabled()

        # Export (what the save dialog calls), rename, delete.
        md = await sidebar.export(first_id, tmp_path / "chat.md", "md")
        text = md.read_text()
        assert text.startswith("# Tell me about zebras") and "## You" in text
        js = json.loads((await sidebar.export(first_id, tmp_path / "c.json", "json")).read_text())
        assert [m["role"] for m in js["messages"]] == ["user", "assistant"]
        assert js["messages"][0]["content"] == "Tell me about giraffes instead"
        await sidebar.rename(first_id, "Animals")
        assert sidebar.list.item(0).text().startswith("Animals")
        assert window.chats_db.sync(lambda s: s.search("animals"))[0].conversation_id == first_id
        await sidebar.delete(second_id)
        assert sidebar.shown_ids() == [first_id]
        assert window.chats_db.sync(lambda s: s.search("pasta")) == []

        # Code blocks: highlighted, with a working copy link. Then a screenshot.
        view.add_user_turn("Show me code", None)
        view.add_assistant_message(
            "Here is **Python**:\n\n```python\ndef greet(name):\n"
            '    return f"Hello, {name}!"  # friendly\n```\n\nAnd a list:\n\n- one\n- two\n'
        )
        index = len(view.code_blocks) - 1
        view.transcript.anchorClicked.emit(QUrl(f"copy:{index}"))  # its Copy link
        assert QGuiApplication.clipboard().text().startswith("def greet(name):")
        window.resize(1200, 760)
        shot = tmp_path / "chat.png"
        assert window.grab().save(str(shot))

    arun(scenario())


def test_crash_keeps_the_interrupted_reply(
    arun, window: MainWindow, tiny_model_q8: Path, tmp_path: Path
) -> None:
    chat, view = window.chat, window.chat_view
    outcomes: list[str] = []
    chat.generation_finished.connect(outcomes.append)

    async def scenario() -> None:
        await _ready(arun, window, tiny_model_q8)
        assert await _turn(arun, window, outcomes, lambda: chat.send("First question")) == "done"
        chat.settings.max_tokens = 1900
        chat.send("Now a very long answer")
        await arun.wait_until(lambda: view.streamed_chars > 200, 30, "streamed text")
        pid = window.supervisor.process.pid  # type: ignore[union-attr]
        os.kill(pid, signal.SIGKILL)
        await arun.wait_until(lambda: len(outcomes) == 2, 15, "the broken stream")
        await arun.wait_until(window.banner.isVisible, 15, "the crash banner")
        rows = _rows(window)
        assert [r.role for r in rows] == ["user", "assistant"] * 2
        kept = rows[-1]
        assert kept.status is MessageStatus.INTERRUPTED
        assert kept.content and kept.content == chat.turns[-1].content
        assert "interrupted" in view.transcript_text()

        # Nobody clicks Restart: the app restarts the worker and reloads the model,
        # saying so in the banner until it is ready.
        assert RESTARTING in window.banner_label.text()
        await arun.wait_until(
            lambda: window.supervisor.status.state in (WorkerState.STARTING, WorkerState.LOADING),
            10,
            "the automatic restart",
        )
        assert window.banner.isVisible() and RESTARTING in window.banner_label.text()
        await arun.wait_until(lambda: window.supervisor.ready, 120, "the restart")
        assert not window.banner.isVisible()
        assert window.supervisor.process.pid != pid  # type: ignore[union-attr]
        assert [t.content for t in chat.turns] == [r.content for r in rows]  # chat intact
        chat.settings.max_tokens = 16
        assert await _turn(arun, window, outcomes, lambda: chat.send("Still there?")) == "done"
        assert len(_rows(window)) == 6

    arun(scenario())
    # After a restart of the app the interrupted reply is still there, still marked.
    window.chats_db.close()
    store = ChatStore(tmp_path / "chats.db")
    messages = store.messages(store.list_conversations()[0].id)
    assert messages[3].status is MessageStatus.INTERRUPTED and messages[3].content
    store.close()
