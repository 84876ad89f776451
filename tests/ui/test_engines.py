"""Settings → Remote engines and chatting with a remote model, against real servers.

A second ``hearth serve`` (with its own API key) is the remote engine. The app's own
worker, started without a local model when the first test needs it, tests engines and
serves the remote model to the chat. Covers: the empty state, a wrong key, a test
that shows latency and the models found, saving (the key never shown back), picking
the remote model in the top bar's picker, a streamed reply with its footer, Stop and
Regenerate, and removing the engine.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from hearth.chats import MessageStatus
from hearth.config.engines import EngineRegistry
from hearth.supervisor import Supervisor, WorkerState, WorkerStatus
from hearth.ui.chat.model import ChatModel
from hearth.ui.chat.turns import ChatSettings
from hearth.ui.shell.main_window import MainWindow
from hearth.ui.shell.model_picker import REMOTE_ROLE, ModelBar
from hearth.ui.style.theme import tokens_for
from remote_testing import REMOTE_KEY, WRONG_KEY
from server_process import ServeProcess, free_port

pytestmark = pytest.mark.ui


@pytest.fixture
def window(qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MainWindow:
    # The app and its worker share the plain-file secret store (no OS keyring here).
    monkeypatch.setenv("HEARTH_SECRET_STORE", "file")
    win = MainWindow(
        log_dir=tmp_path / "logs",
        chat_settings=ChatSettings(temperature=0.8, max_tokens=24),
        chats_db=tmp_path / "chats.db",
    )
    qtbot.addWidget(win)
    win.show()
    return win


def test_add_test_pick_chat_and_remove_a_remote_engine(
    qtbot: QtBot, arun, window: MainWindow, remote: ServeProcess, tmp_path: Path
) -> None:
    box = window.extras.settings_page.engines_box
    chat, view = window.chat, window.chat_view
    outcomes: list[str] = []
    chat.generation_finished.connect(outcomes.append)
    remote_id = httpx.get(f"{remote.base_url}/v1/models", headers=remote.headers()).json()
    loaded = next(m["id"] for m in remote_id["data"] if m["meta"].get("loaded"))
    model = f"gpu/{loaded}"

    async def scenario() -> None:
        # Empty state, with the next step.
        await box.refresh()
        assert box.empty_label.isVisibleTo(box) and not box.table.isVisibleTo(box)
        assert "Add one by its URL" in box.empty_label.text()
        assert not box.edit_button.isEnabled() and not box.remove_button.isEnabled()

        # Add: a bad URL, a port where nothing listens and a wrong key are each named;
        # the right key shows the latency and the models found.
        dialog = box.open_add()
        dialog.name_field.setText("gpu")
        dialog.url_field.setText("ftp://gpu-box")
        await dialog.test()
        assert dialog.result_label.text() == (
            "Could not test: 'ftp://gpu-box' is not an http:// or https:// URL."
        )
        dialog.url_field.setText(f"http://127.0.0.1:{free_port()}")
        await dialog.test()
        assert dialog.result_label.text().startswith("Not reachable: cannot connect")
        dialog.url_field.setText(f"{remote.base_url}/v1")
        dialog.key_field.setText(WRONG_KEY)
        await dialog.test()
        assert dialog.result_label.text() == "Not reachable: HTTP 401 (check its API key)"
        assert window.supervisor.status.state is WorkerState.READY  # started for the test
        assert not window.supervisor.status.model  # ... without a local model
        assert window.status_label.text() == "Ready: remote engines"
        dialog.key_field.setText(REMOTE_KEY)
        await dialog.test()
        shown = dialog.result_label.text()
        assert shown.startswith("OK · Hearth") and " ms · 1 model" in shown, shown
        assert dialog.last_test is not None and dialog.last_test.latency_ms > 0
        assert [dialog.models_list.item(i).text() for i in range(dialog.models_list.count())] == [
            model
        ]
        await dialog.save()
        assert dialog.result() == dialog.DialogCode.Accepted
        await arun.wait_until(lambda: "gpu" in box.health, 30, "the saved engine's test")
        assert [s.name for s in box.engines] == ["gpu"] and box.engines[0].has_key
        assert box.table.item(0, 4).text().startswith("OK · Hearth")
        assert model in box.message.text()
        # The key is stored as a secret, never in the engines file nor in the form.
        registry = EngineRegistry()
        assert REMOTE_KEY not in registry.path.read_text()
        assert registry.api_key(registry.engines()[0]) == REMOTE_KEY
        edit = box.edit_selected()
        assert edit is not None and edit.key_field.text() == ""
        assert edit.name_field.isReadOnly() and edit.forget_key.isVisibleTo(edit)
        await edit.test()  # an edit tests with the saved key
        assert edit.result_label.text().startswith("OK · Hearth"), edit.result_label.text()
        edit.reject()

        # The top bar's picker lists the remote model; choosing it needs no loading.
        await window.open_model_picker()
        picker = window.model_picker
        assert picker.remote_models == [model]
        assert model in picker.visible_names()
        row = next(
            picker.list.item(i)
            for i in range(picker.list.count())
            if picker.list.item(i).data(REMOTE_ROLE) == model
        )
        picker._activate(row)
        assert chat.model.remote == model
        assert window.model_bar.picker_button.text().startswith(f"{model}  ·  Remote")

        # A streamed reply, measured at Hearth, saved with the remote model's name.
        n = len(outcomes)
        qtbot.keyClicks(view.input, "Tell me about zebras")
        qtbot.keyClick(view.input, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
        await arun.wait_until(lambda: len(outcomes) > n, 60, "the remote reply")
        assert outcomes[-1] == "done", view.transcript_text()
        reply = chat.turns[-1]
        assert reply.model == model and reply.content and reply.stats is not None
        assert reply.stats.completion_tokens == 24
        footer = view.stats_label.text()
        assert "tok/s" in footer and "TTFT" in footer and "/ 1024" in footer, footer

        # Stop mid-stream keeps the partial reply; Regenerate writes it again.
        chat.settings.max_tokens = 600
        view.input.setPlainText("A long story please")
        view.send_button.click()
        await arun.wait_until(lambda: view.streamed_chars > 20, 30, "streamed text")
        chat.stop()
        await arun.wait_until(lambda: len(outcomes) == n + 2, 10, "the stop")
        assert outcomes[-1] == "stopped" and chat.turns[-1].content
        assert chat.turns[-1].status is MessageStatus.INTERRUPTED
        chat.settings.max_tokens = 12
        assert chat.regenerate() is not None
        await arun.wait_until(lambda: len(outcomes) == n + 3, 60, "the regenerated reply")
        assert outcomes[-1] == "done" and chat.turns[-1].variant_count == 2
        assert chat.turns[-1].stats is not None and chat.turns[-1].stats.completion_tokens == 12

        # Remove: the engine and its key go; the worker stops listing its models.
        box.select("gpu")
        ask = box.remove_selected()
        assert ask is not None and "its stored key" in ask.text()
        ask.button(ask.StandardButton.Yes).click()
        assert box.task is not None
        await box.task
        assert box.engines == () and box.empty_label.isVisibleTo(box)
        assert "Removed engine 'gpu'" in box.message.text()
        client = window.supervisor.client
        assert client is not None
        assert [m.id for m in await client.model_meta() if m.remote] == []

    arun(scenario())
    # The keys went to the engine and the secret store only: never to the worker's log.
    logs = "".join(p.read_text(errors="replace") for p in (tmp_path / "logs").rglob("*.log"))
    assert "engine gpu tested: ok" in logs
    assert REMOTE_KEY not in logs and WRONG_KEY not in logs


def test_a_local_load_replaces_the_remote_choice(qtbot: QtBot) -> None:
    """Loading a library model makes it the chat's model again; the worker started for
    remote engines (no model name) does not."""
    bar = ModelBar(tokens_for(QApplication.palette()))
    qtbot.addWidget(bar)
    model = ChatModel(Supervisor())
    model.remote_changed.connect(bar.set_remote)
    bar.status_seen.connect(model.on_status)
    model.use_remote("gpu/qwen3")
    assert model.model_id == "gpu/qwen3" and model.available
    bar.set_status(WorkerStatus(WorkerState.STARTING, model=""))
    assert model.remote == "gpu/qwen3"
    assert bar.picker_button.text() == "gpu/qwen3  ·  Remote  ·  Starting"
    bar.set_status(WorkerStatus(WorkerState.READY, model=""))
    assert bar.picker_button.text() == "gpu/qwen3  ·  Remote"
    bar.set_status(WorkerStatus(WorkerState.STARTING, model="tiny.gguf"))
    assert model.remote is None and model.model_id is None
    assert bar.picker_button.text().startswith("tiny.gguf  ·  Starting")
