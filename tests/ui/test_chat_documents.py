"""Documents in the chat, in the real window (issue 24): attach with progress and Cancel,
drops, the inline and retrieval paths against a real worker, the reply's sources, and
hostile files refused on their chips while the chat goes on."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from hearth.chats import SamplingSettings
from hearth.supervisor import LoadOptions, WorkerState
from hearth.ui.chat.turns import ChatSettings
from hearth.ui.shell.main_window import MainWindow
from hostile_files import HOSTILE
from pdf_factory import write_pdf

pytestmark = pytest.mark.ui

FILLER = ["the", "team", "reviewed", "quarterly", "report", "and", "project", "schedule"]
FACT = "Marisol Quint was appointed harbour master of Port Elwyn in 1987."


def long_pdf(folder: Path, pages: int = 300) -> Path:
    rng = random.Random(3)
    lines = [[" ".join(rng.choice(FILLER) for _ in range(12)) for _ in range(40)]
             for _ in range(pages)]  # fmt: skip
    return write_pdf(folder / "handbook.pdf", lines)


def chip_texts(window: MainWindow) -> list[str]:
    return [chip.label.text() for chip in window.chat_view.documents.chips.values()]


def drop(widget, paths: list[Path]) -> bool:
    """Drag ``paths`` over ``widget`` and drop them, as Qt delivers it (a drop goes to
    the widget that accepted the drag); whether the drag was accepted."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    args = (Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton,
            Qt.KeyboardModifier.NoModifier)  # fmt: skip
    enter = QDragEnterEvent(QPoint(10, 10), *args)
    QApplication.sendEvent(widget, enter)
    if enter.isAccepted():
        QApplication.sendEvent(widget, QDropEvent(QPointF(10, 10), *args))
    return enter.isAccepted()


def test_attach_shows_progress_then_the_indexed_chip_and_cancel_stops_it(
    arun, offline_window: MainWindow, tmp_path: Path
) -> None:
    window, chat = offline_window, offline_window.chat
    view = window.chat_view
    window.show()
    assert view.attach_button.isVisibleTo(view.composer)
    assert not view.documents.isVisibleTo(view.footer)  # no document: no chips row
    pdf = long_pdf(tmp_path)

    async def scenario() -> None:
        # Attach: the chip counts pages while the child reads, then says it is indexed.
        chat.set_chat_settings("Answer briefly.", SamplingSettings(temperature=0.2), None)
        chat.documents.attach([pdf])
        assert view.documents.isVisibleTo(view.footer)
        await arun.wait_until(lambda: any("/300 pages" in t for t in chip_texts(window)), 60,
                              "page progress")  # fmt: skip
        await arun.wait_until(lambda: not chat.documents.jobs, 120, "indexing")
        [text] = chip_texts(window)
        assert text.startswith("handbook.pdf · indexed ·") and "passages" in text, text
        # The chat was saved for it, and keeps it.
        cid = chat.conversation_id
        assert cid is not None
        stored = window.chats_db.sync(lambda s: s.attachments.of_chat(cid))
        assert [(a.name, a.mode, a.pages) for a in stored] == [("handbook.pdf", "indexed", 300)]
        conv = window.chats_db.sync(lambda s: s.conversation(cid))  # saved with its settings
        assert (conv.title, conv.system_prompt) == ("handbook.pdf", "Answer briefly.")
        assert conv.sampling.temperature == 0.2
        await arun.wait_until(lambda: window.sidebar.shown_ids() == [cid], 10, "the chat listed")

        # Cancel mid-read: the child ends, the chip goes, nothing is stored.
        second = tmp_path / "copy.pdf"
        second.write_bytes(pdf.read_bytes())
        chat.documents.attach([second])
        await arun.wait_until(lambda: any("copy.pdf · reading " in t for t in chip_texts(window)),
                              60, "the second read to start")  # fmt: skip
        chip = next(c for c in view.documents.chips.values() if c.name == "copy.pdf")
        assert chip.state.busy and chip.button.toolTip() == "Cancel reading"
        chip.button.click()
        await arun.wait_until(lambda: not chat.documents.jobs, 20, "the cancel")
        assert [c.name for c in view.documents.chips.values()] == ["handbook.pdf"]
        names = window.chats_db.sync(lambda s: [a.name for a in s.attachments.of_chat(cid)])
        assert names == ["handbook.pdf"]

        # Remove: the document leaves the chat; a new chat has no chips; reopening shows them.
        chat.new_chat()
        await arun.wait_until(lambda: not view.documents.isVisibleTo(view.footer), 5, "no chips")
        await chat.open_conversation(cid)
        assert [c.name for c in view.documents.chips.values()] == ["handbook.pdf"]
        next(iter(view.documents.chips.values())).button.click()
        await arun.wait_until(lambda: not view.documents.chips, 5, "the removal")
        await arun.wait_until(
            lambda: not window.chats_db.sync(lambda s: s.attachments.of_chat(cid)), 5, "deleted"
        )

    arun(scenario())


def test_a_dropped_file_is_attached_and_a_picture_is_left_alone(
    arun, offline_window: MainWindow, tmp_path: Path
) -> None:
    window, chat = offline_window, offline_window.chat
    window.show()
    view = window.chat_view
    view.body.setCurrentWidget(view.chat_page)  # no model: the chat behind the first-run cards
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nBuy milk.\n")
    picture = tmp_path / "photo.png"
    picture.write_bytes(b"\x89PNG\r\n")

    async def scenario() -> None:
        assert not drop(window.chat_view.transcript.viewport(), [picture])
        assert not chat.documents.jobs and not window.chat_view.documents.chips
        assert drop(window.chat_view.input.viewport(), [notes, picture])
        assert window.chat_view.input.toPlainText() == ""  # not pasted as a path
        await arun.wait_until(lambda: not chat.documents.jobs, 60, "reading")
        assert chip_texts(window) == ["notes.md · whole in the prompt"]

    arun(scenario())


@pytest.fixture
def window(qtbot: QtBot, tmp_path: Path) -> MainWindow:
    win = MainWindow(
        log_dir=tmp_path / "logs",
        load_options=LoadOptions(n_ctx=8192, n_parallel=1),
        chat_settings=ChatSettings(temperature=0.0, max_tokens=6),
        chats_db=tmp_path / "chats.db",
    )
    qtbot.addWidget(win)
    win.show()
    return win


def test_inline_and_retrieved_documents_reach_the_worker_and_sources_show(
    arun, window: MainWindow, tiny_model_q8: Path, tmp_path: Path
) -> None:
    chat, view = window.chat, window.chat_view
    outcomes: list[str] = []
    chat.generation_finished.connect(outcomes.append)
    notes = tmp_path / "notes.md"
    notes.write_text("\n".join(f"- item {i}: the spare key is under the pot" for i in range(20)))
    lines = [" ".join(random.Random(i).choice(FILLER) for _ in range(10)) for i in range(400)]
    lines[300] = FACT
    long_text = tmp_path / "records.txt"
    long_text.write_text("\n".join(lines))

    async def turn(text: str) -> int:
        n = len(outcomes)
        assert chat.send(text) is not None
        await arun.wait_until(lambda: len(outcomes) > n, 120, "the reply")
        assert outcomes[-1] == "done"
        assert chat.last_stats is not None and chat.last_stats.prompt_tokens is not None
        return chat.last_stats.prompt_tokens

    async def scenario() -> None:
        window.open_model(tiny_model_q8)
        await arun.wait_until(lambda: window.supervisor.status.state is WorkerState.READY, 120,
                              "the model")  # fmt: skip
        bare = await turn("hello there")

        # Inline: the whole file goes into the prompt the worker counts.
        chat.new_chat()
        chat.documents.attach([notes])
        await arun.wait_until(lambda: not chat.documents.jobs, 60, "reading")
        assert chip_texts(window) == ["notes.md · whole in the prompt"]
        with_notes = await turn("hello there")
        assert with_notes - bare > len(notes.read_text()) // 3, (bare, with_notes)
        assert chat.turns[-1].sources == ()  # nothing retrieved: no sources line
        assert "Sources (" not in view.transcript_text()

        # Retrieval: a file too long to go whole is indexed; the question finds the fact.
        chat.new_chat()
        chat.documents.attach([long_text])
        await arun.wait_until(lambda: not chat.documents.jobs, 60, "indexing")
        [chip] = chip_texts(window)
        assert chip.startswith("records.txt · indexed ·"), chip
        asked = await turn("Who became harbour master of Port Elwyn?")
        reply = chat.turns[-1]
        assert reply.sources and FACT in reply.sources[0].text
        assert reply.sources[0].where.startswith("records.txt, line ")
        assert asked - bare > len(FACT) // 2
        index = len(chat.turns) - 1
        assert f"Sources ({len(reply.sources)})" in view.transcript_text()
        assert "records.txt, line" not in view.transcript_text()  # folded
        view.transcript.anchorClicked.emit(QUrl(f"msg:sources:{index}"))
        assert reply.sources[0].where in view.transcript_text()  # unfolded
        view.transcript.anchorClicked.emit(QUrl(f"source:{index}:0"))
        shown = chat.documents.source_window
        assert shown is not None and shown.isVisible()
        assert FACT in shown.text.toPlainText() and shown.windowTitle() == reply.sources[0].where
        shown.close()

        # Reopened, the reply keeps its sources and the chat its document.
        cid = chat.conversation_id
        assert cid is not None
        chat.new_chat()
        await chat.open_conversation(cid)
        assert chat.turns[-1].sources[0].text == reply.sources[0].text
        assert "Sources (" in view.transcript_text()
        assert [c.name for c in view.documents.chips.values()] == ["records.txt"]

    arun(scenario(), timeout=400)


def test_hostile_files_are_refused_on_their_chips_and_the_chat_still_sends(
    arun, window: MainWindow, tiny_model_q8: Path, tmp_path: Path
) -> None:
    chat = window.chat
    outcomes: list[str] = []
    chat.generation_finished.connect(outcomes.append)
    made = {kind: make(tmp_path) for kind, make in HOSTILE.items()}

    async def scenario() -> None:
        window.open_model(tiny_model_q8)
        await arun.wait_until(lambda: window.supervisor.status.state is WorkerState.READY, 120,
                              "the model")  # fmt: skip
        chat.documents.attach([path for path, _ in made.values()])
        await arun.wait_until(lambda: not chat.documents.jobs, 120, "the refusals")
        chips = {c.name: c for c in window.chat_view.documents.chips.values()}
        for kind, (path, message) in made.items():
            chip = chips[path.name]
            assert chip.state.error and message in chip.label.text(), (kind, chip.label.text())
            assert chip.button.toolTip() == "Remove from the chat"
        assert window.chat_view.send_button.isEnabled()
        assert chat.send("still there?") is not None
        await arun.wait_until(lambda: outcomes, 120, "the reply")
        assert outcomes == ["done"] and chat.turns[-1].content

    arun(scenario(), timeout=300)
