"""Message cards: hover actions, variants kept in SQLite and switched with < 1/2 >,
delete, copy, reasoning folded above the answer, and a Max tokens typed just before
Regenerate honoured (against a real worker)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, Qt, QUrl
from PySide6.QtGui import QGuiApplication
from pytestqt.qtbot import QtBot

from gguf_factory import EOS_ID
from hearth.chats import MessageStatus
from hearth.supervisor import LoadOptions, Supervisor, WorkerState
from hearth.ui.chat.message_card import CardMeta
from hearth.ui.chat.session import ChatController
from hearth.ui.chat.turns import ChatSettings, Turn
from hearth.ui.chat.view import ChatView
from hearth.ui.shell.main_window import MainWindow
from hearth.ui.tasks import TaskSet

pytestmark = pytest.mark.ui


def _point_in(view: ChatView, text: str) -> QPoint:
    """A viewport point over the first occurrence of ``text`` in the transcript."""
    found = view.transcript.document().find(text)
    assert not found.isNull(), text
    rect = view.transcript.cursorRect(found)
    return rect.center()


def test_hover_shows_the_cards_actions(qtbot: QtBot) -> None:
    view = ChatView()
    qtbot.addWidget(view)
    view.resize(900, 600)
    view.set_can_send(True)
    view.show()
    view.add_user_turn("A **bold** question", 0)
    view.add_assistant_message("An answer", index=1, meta=CardMeta("tiny-model", (1, 3)))
    text = view.transcript_text()
    assert "You" in text and "tiny-model" in text and "2/3" in text
    assert "**" not in text  # the user's message is markdown too

    card = view.hover(_point_in(view, "An answer"))
    assert card is not None and (card.index, card.role) == (1, "assistant")
    buttons = view.card_actions.buttons
    assert view.card_actions.isVisible()
    assert buttons["regenerate"].isVisibleTo(view) and not buttons["edit"].isVisibleTo(view)
    actions: list[tuple[str, int]] = []
    view.message_action.connect(lambda kind, i: actions.append((kind, i)))
    qtbot.mouseClick(buttons["copy"], Qt.MouseButton.LeftButton)

    card = view.hover(_point_in(view, "question"))
    assert card is not None and card.role == "user"
    assert buttons["edit"].isVisibleTo(view) and not buttons["regenerate"].isVisibleTo(view)
    qtbot.mouseClick(buttons["edit"], Qt.MouseButton.LeftButton)
    view.transcript.anchorClicked.emit(QUrl("msg:prev:1"))  # the < of < 2/3 >
    assert actions == [("copy", 1), ("edit", 0), ("prev", 1)]


def test_reasoning_is_folded_and_unfolds(qtbot: QtBot) -> None:
    view = ChatView()
    qtbot.addWidget(view)
    view.set_can_send(True)
    chat = ChatController(view, Supervisor(), TaskSet())
    reply = Turn("assistant", "The answer is 4.", model="tiny", reasoning="2 + 2 is 4.")
    reply.reasoning_ms = 3200
    chat.turns = [Turn("user", "2 + 2?"), reply]
    chat.redraw()
    assert "Thought for 3 s" in view.transcript_text()
    assert "2 + 2 is 4." not in view.transcript_text()  # folded by default
    chat.card_actions.on_action("think", 1)
    assert "2 + 2 is 4." in view.transcript_text()
    assert view.transcript_text().index("2 + 2 is 4.") < view.transcript_text().index(
        "The answer is 4."
    )
    chat.card_actions.on_action("copy", 1)
    assert QGuiApplication.clipboard().text() == "The answer is 4."
    QGuiApplication.clipboard().clear()

    # Streaming: the fold goes in above the answer once the answer starts.
    view.begin_assistant_turn(2, CardMeta("tiny"))
    view.set_generating(True)
    view.show_reasoning(CardMeta("tiny", reasoning="Hmm.", reasoning_s=1.0))
    view.append_delta("Streamed answer")
    view.end_assistant_turn()
    view.set_generating(False)
    text = view.transcript_text()
    assert text.index("Thought for 1 s") < text.index("Streamed answer")


@pytest.fixture
def window(qtbot: QtBot, arun, tmp_path: Path) -> MainWindow:
    win = MainWindow(
        log_dir=tmp_path / "logs",
        load_options=LoadOptions(n_ctx=2048, n_parallel=2),
        # Random weights: EOS banned and the seed fixed, so replies run to Max tokens.
        chat_settings=ChatSettings(temperature=0.8, seed=1234, logit_bias={EOS_ID: -100.0}),
        chats_db=tmp_path / "chats.db",
    )
    qtbot.addWidget(win)
    win.show()
    return win


def test_variants_delete_and_max_tokens_before_regenerate(
    qtbot: QtBot, arun, window: MainWindow, tiny_model_q8: Path
) -> None:
    chat, view = window.chat, window.chat_view
    max_tokens = window.settings_panel.fields["max_tokens"]
    outcomes: list[str] = []
    chat.generation_finished.connect(outcomes.append)

    def rows() -> list:
        cid = chat.conversation_id
        assert cid is not None
        return window.chats_db.sync(lambda s: s.messages(cid))

    async def finished(n: int) -> None:
        await arun.wait_until(lambda: len(outcomes) > n, 60, "the turn")

    async def scenario() -> None:
        window.open_model(tiny_model_q8)
        await arun.wait_until(
            lambda: window.supervisor.status.state is WorkerState.READY, 120, "the model"
        )
        max_tokens.setValue(12)
        window.settings_panel.commit()
        chat.send("Tell me about zebras")
        await finished(0)
        first = rows()[-1]
        assert first.stats.completion_tokens == 12 and first.model == chat.supervisor.model_id

        # Max tokens typed (not even Enter) and Regenerate at once: the new value holds.
        max_tokens.selectAll()
        qtbot.keyClicks(max_tokens, "5")
        view.message_action.emit("regenerate", 1)
        await finished(1)
        second = rows()[-1]
        assert second.stats.completion_tokens == 5
        assert (second.variant_index, second.variant_count) == (1, 2)
        assert "2/2" in view.transcript_text()
        assert [r.role for r in rows()] == ["user", "assistant"]

        # < goes back to the first reply, from SQLite; > comes back.
        task = chat.card_actions.on_action("prev", 1)
        assert task is not None
        await task
        assert rows()[-1].id == first.id and chat.turns[1].content == first.content
        assert "1/2" in view.transcript_text()
        await chat.card_actions.on_action("next", 1)  # type: ignore[misc]
        assert rows()[-1].id == second.id

        # Stop: the footer still has the reply's stats.
        max_tokens.setValue(1500)
        chat.send("A long story please")
        await arun.wait_until(lambda: view.streamed_chars > 20, 30, "streamed text")
        chat.stop()
        await finished(2)
        assert outcomes[-1] == "stopped"
        assert "tokens" in view.stats_label.text() and "stopped" in view.stats_label.text()
        assert rows()[-1].status is MessageStatus.INTERRUPTED

        # Delete the reply with its variants, then the question.
        await chat.card_actions.on_action("delete", 1)  # type: ignore[misc]
        assert [r.content for r in rows()][:1] == ["Tell me about zebras"]
        assert len(rows()) == 3
        assert window.chats_db.sync(lambda s: s.variants(first.id)) == []

    arun(scenario())


def test_reasoning_content_from_a_real_worker_is_folded_and_kept(
    qtbot: QtBot, arun, tmp_path: Path, llama_cpp_templates: Path
) -> None:
    """A scripted Qwen3 (its real template) thinks, then answers: the worker sends the
    thinking as reasoning_content; the chat folds it above the answer and stores it."""
    from gguf_scripted import Family, write_scripted

    qwen3 = Family(user_defined=("<think>", "</think>", "<tool_call>", "</tool_call>"))
    template = (llama_cpp_templates / "Qwen-Qwen3-0.6B.jinja").read_text(encoding="utf-8")
    model = write_scripted(
        tmp_path / "qwen3-scripted.gguf",
        template=template,
        family=qwen3,
        reply="<think>\nCount the legs.\n</think>\n\nFour legs.",
    )
    window = MainWindow(
        log_dir=tmp_path / "logs",
        load_options=LoadOptions(n_ctx=2048, n_parallel=1),
        chat_settings=ChatSettings(temperature=0.0, max_tokens=64),
        chats_db=tmp_path / "chats.db",
    )
    qtbot.addWidget(window)
    window.show()
    chat, view = window.chat, window.chat_view
    outcomes: list[str] = []
    chat.generation_finished.connect(outcomes.append)

    async def scenario() -> None:
        window.open_model(model)
        await arun.wait_until(
            lambda: window.supervisor.status.state is WorkerState.READY, 120, "the model"
        )
        chat.send("How many legs has a dog?")
        await arun.wait_until(lambda: outcomes, 60, "the reply")
        text = view.transcript_text()
        assert "Thought for" in text and "Four legs." in text
        assert "Count the legs." not in text  # folded
        assert text.index("Thought for") < text.index("Four legs.")
        cid = chat.conversation_id
        assert cid is not None
        reply = window.chats_db.sync(lambda s: s.messages(cid))[-1]
        assert reply.content.strip() == "Four legs."
        assert reply.reasoning == "Count the legs."
        assert reply.reasoning_ms is not None

    arun(scenario())


def test_a_long_code_block_folds_and_shows_again(qtbot: QtBot) -> None:
    view = ChatView()
    qtbot.addWidget(view)
    view.resize(900, 600)
    view.set_can_send(True)
    view.show()
    long_code = "\n".join(f"print({i})" for i in range(40))
    view.add_assistant_message(
        f"Short:\n\n```python\nx = 1\n```\n\nLong:\n\n```python\n{long_code}\n```\n\nAfter."
    )
    doc = view.transcript.document()
    text = view.transcript_text()
    assert text.count("Fold") == 1  # only the long block
    height = doc.size().height()
    view.transcript.anchorClicked.emit(QUrl("fold:1"))
    assert doc.size().height() < height - 200
    assert "Show" in view.transcript_text() and "Fold" not in view.transcript_text()
    assert "After." in view.transcript_text() and view.copy_code(1) == long_code
    assert view.fold_code(1) is False  # shown again
    assert doc.size().height() == height and "Fold" in view.transcript_text()
