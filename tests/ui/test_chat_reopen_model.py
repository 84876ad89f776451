"""Reopening a chat chooses the remote model its last reply came from (issue 15).

A second ``hearth serve`` is the remote engine ``gpu``. A chat held with ``gpu/<model>``
and reopened later is with that model again, without loading anything locally, and
its next turn is answered by the engine. Once the engine is removed, reopening the
chat says so in the footer and keeps the current model. A chat written by a local
model keeps the current model, as before (opening a chat never loads a file).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pytestqt.qtbot import QtBot

from hearth.chats import ChatStore
from hearth.config.engines import EngineRegistry
from hearth.supervisor import WorkerState
from hearth.ui.chat.model import remote_engine_name
from hearth.ui.chat.turns import ChatSettings
from hearth.ui.shell.main_window import MainWindow
from server_process import ServeProcess, start_serve

pytestmark = pytest.mark.ui


@pytest.fixture(scope="module")
def remote(tiny_model_q8: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    folder = tmp_path_factory.mktemp("reopen-remote")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HEARTH_CONFIG_DIR", str(folder / "config"))
        env.setenv("HEARTH_DATA_DIR", str(folder / "data"))
        served = start_serve(tiny_model_q8, folder, ctx=1024, parallel=2)
    yield served
    served.stop()


def test_remote_and_local_model_names() -> None:
    assert remote_engine_name("gpu/qwen3-32b") == "gpu"
    assert remote_engine_name("ollama/library/llama3:8b") == "ollama"
    for local in (None, "", "tiny-Q8_0", "/x", "gpu/"):
        assert remote_engine_name(local) is None


def test_reopening_a_chat_chooses_its_remote_model_while_the_engine_exists(
    qtbot: QtBot, arun: Any, remote: ServeProcess, tmp_path: Path
) -> None:
    served = httpx.get(f"{remote.base_url}/v1/models").json()["data"]
    model = "gpu/" + next(m["id"] for m in served if m["meta"].get("loaded"))
    registry = EngineRegistry()
    registry.add("gpu", remote.base_url)
    chats_db = tmp_path / "chats.db"
    store = ChatStore(chats_db)  # a chat written by a local model, earlier
    local_chat = store.create_conversation("Local chat", model="tiny-Q8_0").id
    store.add_message(local_chat, "user", "hello")
    store.add_message(local_chat, "assistant", "hi", model="tiny-Q8_0")
    store.close()

    window = MainWindow(
        log_dir=tmp_path / "logs",
        chat_settings=ChatSettings(temperature=0.0, max_tokens=16),
        chats_db=chats_db,
    )
    qtbot.addWidget(window)
    window.show()
    chat, bar = window.chat, window.model_bar.picker_button
    outcomes: list[str] = []
    chat.generation_finished.connect(outcomes.append)

    async def turn(text: str) -> None:
        n = len(outcomes)
        window.chat_view.input.setPlainText(text)
        window.chat_view.send_button.click()
        await arun.wait_until(lambda: len(outcomes) > n, 60, "the reply")
        assert outcomes[-1] == "done", window.chat_view.transcript_text()

    async def scenario() -> None:
        # A chat with the remote model, chosen as the picker chooses it (the picker
        # starts a worker without a local model to list the engines' models).
        chat.model.use_remote(model)
        await chat.model.ensure_worker()
        await turn("Tell me about zebras")
        remote_chat = chat.conversation_id
        assert remote_chat is not None and chat.turns[-1].model == model
        assert not window.supervisor.status.model  # a worker without a local model

        # Later: no worker runs, and the chat is on the local choice. A local model's
        # chat keeps it: nothing changes, nothing starts.
        await window.supervisor.stop()
        chat.model.use_remote(None)
        await chat.open_conversation(local_chat)
        assert chat.model.remote is None and not bar.text().endswith("Remote")
        assert "unavailable" not in window.chat_view.stats_label.text()
        assert window.supervisor.process is None

        # Reopening the remote chat chooses its model again, and starts the worker
        # it is served by, without loading anything locally.
        await chat.open_conversation(remote_chat)
        assert chat.model.remote == model
        assert bar.text().startswith(f"{model}  ·  Remote"), bar.text()
        await arun.wait_until(
            lambda: window.supervisor.status.state is WorkerState.READY, 60, "the worker"
        )
        assert not window.supervisor.status.model
        assert window.chat_view.send_button.isEnabled()
        footer = window.chat_view.stats_label.text()
        assert "tok/s" in footer and "unavailable" not in footer, footer
        await turn("And about horses?")
        reply = chat.turns[-1]
        assert reply.model == model and reply.content and len(chat.turns) == 4
        assert not window.supervisor.status.model  # the engine answered

        # The engine is removed: reopening says so, and the current model stays.
        assert registry.remove("gpu")
        chat.new_chat()
        chat.model.use_remote(None)
        await chat.open_conversation(remote_chat)
        assert chat.model.remote is None
        assert not bar.text().endswith("Remote"), bar.text()
        footer = window.chat_view.stats_label.text()
        stats, notice = footer.split("\n")
        assert "tok/s" in stats  # the reply's own stats stay above the notice
        assert notice == (
            f"{model} is unavailable: engine 'gpu' is no longer configured."
            " Choose a model to continue."
        )
        # Another remote choice is kept too, and named.
        chat.new_chat()
        chat.model.use_remote("other/model")
        await chat.open_conversation(remote_chat)
        assert chat.model.remote == "other/model"
        assert window.chat_view.stats_label.text().endswith(". Still chatting with other/model.")

    arun(scenario())
