"""Documents are read in a child process (``hearth --read-document``): the pages come
back with their progress, a hostile file's refusal keeps its message, and Cancel ends
the child (issue 24)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from hearth.chats.doc_job import DocumentReader
from hearth.chats.doc_parse import DocumentCancelled, DocumentError
from hostile_files import HOSTILE
from pdf_factory import write_pdf


def test_a_pdf_is_read_in_a_child_with_its_pages_and_progress(tmp_path: Path):
    path = write_pdf(tmp_path / "report.pdf", [["Page one says hello."], ["Page two, ünïcode."]])
    seen: list[tuple[int, int]] = []
    document = DocumentReader(path).read(lambda done, total: seen.append((done, total)))
    assert (document.name, document.kind, document.pages) == ("report.pdf", "pdf", 2)
    assert [s.page for s in document.sections] == [1, 2]
    assert "Page two, ünïcode." in document.sections[1].text
    assert seen == [(1, 2), (2, 2)]
    code = tmp_path / "main.py"
    code.write_text("\n".join(f"x_{i} = {i}" for i in range(50)))
    assert [s.line for s in DocumentReader(code).read().sections] == [1, 41]


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_file_is_refused_by_the_child_with_its_message(tmp_path: Path, kind: str):
    path, message = HOSTILE[kind](tmp_path)
    with pytest.raises(DocumentError, match=message):
        DocumentReader(path).read()


def test_cancel_ends_the_child_mid_document(tmp_path: Path):
    pages = [[f"Line {n} of page {p} with some words." for n in range(40)] for p in range(300)]
    path = write_pdf(tmp_path / "long.pdf", pages)
    reader = DocumentReader(path)
    started = threading.Event()
    progress: list[int] = []

    def on_progress(done: int, _total: int) -> None:
        progress.append(done)
        started.set()

    outcome: list[BaseException] = []

    def read() -> None:
        try:
            reader.read(on_progress)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=read)
    thread.start()
    assert started.wait(60), "no page was read"
    cancelled_at = time.monotonic()
    reader.cancel()
    thread.join(10)
    assert not thread.is_alive()
    assert time.monotonic() - cancelled_at < 5
    assert len(outcome) == 1 and isinstance(outcome[0], DocumentCancelled)
    assert max(progress) < 300


def test_a_reader_that_cannot_start_is_a_refusal_not_a_crash(tmp_path: Path):
    notes = tmp_path / "notes.md"
    notes.write_text("text")
    missing = tmp_path / "no-such-hearth"
    with pytest.raises(DocumentError, match=r"notes\.md can't be read"):
        DocumentReader(notes, launcher=[str(missing)]).read()
