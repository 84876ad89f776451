"""Files a chat must refuse to read (issue 24), written for tests: an encrypted PDF, a
damaged PDF, a zip bomb inside a DOCX, a 2 GB file (sparse: nothing on disk) and binary
junk under a text name. Each maker returns the path and a piece of the message the
refusal must carry."""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Callable
from pathlib import Path

import docx
from pypdf import PdfReader, PdfWriter

from pdf_factory import write_pdf


def encrypted_pdf(folder: Path) -> tuple[Path, str]:
    plain = write_pdf(folder / "plain.pdf", [["secret plans"]])
    writer = PdfWriter(clone_from=PdfReader(plain))
    writer.encrypt("hunter2")
    locked = folder / "locked.pdf"
    with locked.open("wb") as out:
        writer.write(out)
    return locked, "password-protected"


def damaged_pdf(folder: Path) -> tuple[Path, str]:
    plain = write_pdf(folder / "whole.pdf", [["secret plans"]])
    broken = folder / "broken.pdf"
    broken.write_bytes(plain.read_bytes()[:40])
    return broken, "damaged or not a PDF"


def zip_bomb_docx(folder: Path) -> tuple[Path, str]:
    """A real DOCX with a 64 MB part of zeros that packs to about 64 KB."""
    document = docx.Document()
    document.add_paragraph("innocent")
    buffer = io.BytesIO()
    document.save(buffer)
    path = folder / "bomb.docx"
    path.write_bytes(buffer.getvalue())
    zeros = bytes(2**20)
    with (
        zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as archive,
        archive.open("word/media/padding.bin", "w", force_zip64=True) as member,
    ):
        for _ in range(64):
            member.write(zeros)
    assert path.stat().st_size < 2 * 2**20
    return path, "zip bomb"


def huge_file(folder: Path) -> tuple[Path, str]:
    path = folder / "huge.txt"
    with path.open("wb") as handle:
        handle.truncate(2 * 2**30)  # sparse: 2 GB on paper, nothing on disk
    return path, "at most 256 MB"


def binary_junk(folder: Path) -> tuple[Path, str]:
    path = folder / "notes.txt"
    path.write_bytes(os.urandom(4096))
    return path, "not text"


HOSTILE: dict[str, Callable[[Path], tuple[Path, str]]] = {
    "encrypted pdf": encrypted_pdf,
    "damaged pdf": damaged_pdf,
    "zip bomb docx": zip_bomb_docx,
    "2 GB file": huge_file,
    "binary junk": binary_junk,
}
