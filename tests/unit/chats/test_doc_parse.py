"""Documents attached to a chat are read with where each part came from, and hostile
files are refused with a message the chat can show (issue 24)."""

from __future__ import annotations

import threading
from pathlib import Path

import docx
import pytest

from hearth.chats.doc_parse import DocumentCancelled, DocumentError, parse_document
from hostile_files import binary_junk, damaged_pdf, encrypted_pdf, huge_file, zip_bomb_docx
from pdf_factory import write_pdf


def test_a_pdf_is_read_page_by_page_with_progress(tmp_path: Path):
    path = write_pdf(tmp_path / "report.pdf", [["Page one says hello."], ["Page (two) \\ here."]])
    seen: list[tuple[int, int]] = []
    parsed = parse_document(path, progress=lambda done, total: seen.append((done, total)))
    assert (parsed.kind, parsed.pages) == ("pdf", 2)
    assert [s.page for s in parsed.sections] == [1, 2]
    assert "Page one says hello." in parsed.sections[0].text
    assert "Page (two) \\ here." in parsed.sections[1].text
    assert seen == [(1, 2), (2, 2)]


def test_reading_a_pdf_can_be_cancelled_between_pages(tmp_path: Path):
    path = write_pdf(tmp_path / "long.pdf", [[f"page {i}"] for i in range(20)])
    cancel = threading.Event()

    def progress(done: int, _total: int) -> None:
        if done == 3:
            cancel.set()

    with pytest.raises(DocumentCancelled):
        parse_document(path, cancel=cancel, progress=progress)


def test_an_encrypted_or_damaged_pdf_is_refused(tmp_path: Path):
    for make in (encrypted_pdf, damaged_pdf):
        path, message = make(tmp_path)
        with pytest.raises(DocumentError, match=message):
            parse_document(path)


def test_a_docx_gives_its_paragraphs_and_tables(tmp_path: Path):
    document = docx.Document()
    document.add_paragraph("The first paragraph.")
    document.add_paragraph("The second one.")
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text = "cell A"
    table.rows[0].cells[1].text = "cell B"
    path = tmp_path / "notes.docx"
    document.save(str(path))
    parsed = parse_document(path)
    assert parsed.kind == "docx"
    assert parsed.text == "The first paragraph.\nThe second one.\ncell A | cell B"


def test_a_zip_bomb_inside_a_docx_is_refused_before_it_unpacks(tmp_path: Path):
    path, message = zip_bomb_docx(tmp_path)
    with pytest.raises(DocumentError, match=message):
        parse_document(path)
    not_zip = tmp_path / "fake.docx"
    not_zip.write_bytes(b"PK but not really a zip file")
    with pytest.raises(DocumentError, match="not a Word document"):
        parse_document(not_zip)


def test_a_huge_file_is_refused_without_being_read(tmp_path: Path):
    path, message = huge_file(tmp_path)
    with pytest.raises(DocumentError, match=message):
        parse_document(path)


def test_binary_junk_under_a_text_name_is_refused(tmp_path: Path):
    path, message = binary_junk(tmp_path)
    with pytest.raises(DocumentError, match=message):
        parse_document(path)
    unknown = tmp_path / "photo.exe"
    unknown.write_bytes(b"MZ")
    with pytest.raises(DocumentError, match=r"\.exe files can't be attached"):
        parse_document(unknown)


def test_text_code_csv_and_html_keep_their_lines(tmp_path: Path):
    code = tmp_path / "main.py"
    code.write_text("\n".join(f"line_{i} = {i}" for i in range(1, 101)))
    parsed = parse_document(code)
    assert [s.line for s in parsed.sections] == [1, 41, 81]
    assert parsed.sections[1].text.startswith("line_41 = 41")
    table = tmp_path / "prices.csv"
    table.write_text("item,price\n" + "\n".join(f"thing{i},{i}" for i in range(60)))
    sections = parse_document(table).sections
    assert all(s.text.startswith("item, price") for s in sections)  # each passage has the header
    page = tmp_path / "page.html"
    page.write_text("<html><head><style>p{}</style><script>var x=1;</script></head>"
                    "<body><h1>Title</h1><p>Some &amp; text.</p></body></html>")  # fmt: skip
    assert parse_document(page).text == "Title\nSome & text."
