"""Several models in the app, on a real worker with two tiny library models (issue 22).

The top bar shows a chip per loaded model; the Load dialog, with a model loaded, asks
"Load alongside" or "Replace" and its estimate names the loaded model; alongside keeps
both in the same worker (no restart), and the new one becomes the chat's; each chat
keeps its model when chats are switched, without a load; one chip's Eject leaves the
other; Replace leaves only the new one; the Server page's request log names the model
of each request.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

from hearth.supervisor import WorkerState
from hearth.ui.dialogs.load_dialog import LoadDialog
from hearth.ui.shell.main_window import MainWindow

pytestmark = pytest.mark.ui


@pytest.fixture
def window(library_window: MainWindow) -> MainWindow:
    return library_window


def model_id(path: Path) -> str:
    return path.name.removesuffix(".gguf")


async def open_dialog(arun: Any, window: MainWindow, path: Path) -> LoadDialog:
    dialog = window.extras.show_load_dialog(path)
    await arun.wait_until(lambda: dialog.meta is not None, 30, "the model's header")
    await arun.wait_until(dialog.load_button.isEnabled, 30, "the estimate")
    return dialog


def test_two_models_alongside_eject_one_replace_and_each_chat_keeps_its_model(
    qtbot: QtBot, arun: Any, window: MainWindow, tiny_model_q8: Path, tiny_model_f16: Path
) -> None:
    q8, f16 = model_id(tiny_model_q8), model_id(tiny_model_f16)
    bar, chat = window.model_bar, window.chat
    outcomes: list[str] = []
    chat.generation_finished.connect(outcomes.append)

    def chips() -> list[str]:
        return list(bar.chips.chips) if bar.chips.isVisible() else []

    async def turn(text: str) -> None:
        n = len(outcomes)
        window.chat_view.input.setPlainText(text)
        window.chat_view.send_button.click()
        await arun.wait_until(lambda: len(outcomes) > n, 60, "the reply")
        assert outcomes[-1] == "done", window.chat_view.transcript_text()

    async def scenario() -> None:
        window.open_model(tiny_model_q8)
        await arun.wait_until(lambda: chips() == [q8], 120, "the first model's chip")
        pid = window.supervisor.process.pid if window.supervisor.process else None
        chip = bar.chips.chips[q8]
        assert "pinned" in chip.button.text() and "B" in chip.details  # its memory
        assert not bar.eject_button.isVisible()  # each chip has its own
        assert bar.picker_button.text().startswith("Load another model")

        # With a model loaded, the Load dialog asks, and counts the loaded model.
        dialog = await open_dialog(arun, window, tiny_model_f16)
        assert dialog.load_button.text() == "Load alongside"
        assert dialog.residents.replace_button.text() == "Replace"
        note = dialog.residents.label.text()
        assert note.startswith(f"Loaded now: {q8} (") and "budget" in note, note
        dialog.load_button.click()
        await arun.wait_until(lambda: set(chips()) == {q8, f16}, 120, "both chips")
        assert window.supervisor.process is not None and window.supervisor.process.pid == pid
        assert chat.model.model_id == f16  # the model just loaded is the chat's
        assert bar.chips.chips[f16].current and not bar.chips.chips[q8].current
        status_line = window.status_label
        await arun.wait_until(
            lambda: q8 in status_line.text() and f16 in status_line.text(), 10, "status line"
        )
        limits = window.extras.settings_page.models_box.running_label.text()
        assert limits.startswith("The model worker now: up to 3 models within "), limits

        # Each chat keeps its model: switching chats sends each its own, loads nothing.
        await turn("Tell me about zebras")
        f16_chat = chat.conversation_id
        chat.new_chat()
        bar.chips.chips[q8].use_requested.emit(q8)  # the chip's "Chat with this model"
        assert chat.model.model_id == q8
        await turn("And about horses?")
        q8_chat = chat.conversation_id
        assert f16_chat is not None and q8_chat is not None
        await chat.open_conversation(f16_chat)
        assert chat.model.model_id == f16 and chat.turns[-1].model == f16
        await chat.open_conversation(q8_chat)
        assert chat.model.model_id == q8 and chat.turns[-1].model == q8
        assert window.supervisor.process.pid == pid and set(chips()) == {q8, f16}

        # The Server page's request log names each request's model.
        panel = window.extras.server_panel
        polled = panel.poll_requests()
        if polled is not None:
            await polled
        await arun.wait_until(lambda: panel.requests, 10, "the request log")
        models = set(panel.log_table.column_texts("Model"))
        assert {q8, f16} <= models, models

        # One chip's Eject unloads that model only; the chat moves to the other.
        bar.chips.chips[f16].eject_button.click()
        await arun.wait_until(lambda: chips() == [q8], 60, "the f16 chip to go")
        assert window.supervisor.status.state is WorkerState.READY
        assert window.supervisor.process.pid == pid
        status = await window.supervisor.client.residency()  # type: ignore[union-attr]
        assert [m.info.id for m in status.models] == [q8]
        # Its chat, reopened, says so and goes on with the loaded one (nothing loads).
        await chat.open_conversation(f16_chat)
        assert chat.model.model_id == q8
        assert window.chat_view.stats_label.text().endswith(
            f"{f16} is not loaded; still chatting with {q8}. Load it to go on with it."
        )
        assert chips() == [q8]

        # Replace: only the new model stays, in the same worker.
        dialog = await open_dialog(arun, window, tiny_model_f16)
        dialog.residents.replace_button.click()
        await arun.wait_until(lambda: chips() == [f16], 120, "only the new model")
        assert window.supervisor.process.pid == pid
        assert chat.model.model_id == f16

    arun(scenario())
