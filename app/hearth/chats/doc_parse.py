"""Reading a document a user attaches to a chat into text with its place in the file.

PDF (pypdf), DOCX (python-docx), and text formats (Markdown, plain text, code, CSV,
HTML). Every refusal is a ``DocumentError`` whose message says what is wrong and what
to do, so the chat can show it and go on: a file too big to read, a password-protected
or damaged PDF, a DOCX whose parts would unpack to far more than the file (a zip bomb),
binary junk under a text name. Parsing runs off the GUI's thread, reports progress per
page and can be cancelled between pages.
"""

from __future__ import annotations

import csv
import io
import logging
import threading
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 256 * 1024 * 1024
"""A bigger attachment is refused before it is read."""

MAX_UNPACKED_BYTES = 512 * 1024 * 1024
"""A DOCX whose parts unpack to more than this is refused (a zip bomb)."""

MAX_PACK_RATIO = 200
"""Nor may one part unpack to more than this many times its packed size."""

TEXT_SUFFIXES = {
    ".txt", ".md", ".markdown", ".rst", ".log", ".json", ".yaml", ".yml", ".toml", ".ini",
    ".cfg", ".xml", ".py", ".js", ".ts", ".tsx", ".jsx", ".java", ".c", ".h", ".cc", ".cpp",
    ".hpp", ".cs", ".go", ".rs", ".rb", ".php", ".swift", ".kt", ".scala", ".sh", ".sql",
    ".r", ".lua", ".pl", ".m", ".tex",
}  # fmt: skip
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
CSV_SUFFIXES = {".csv", ".tsv"}

Progress = Callable[[int, int], None]
"""(done, total) units of work: pages of a PDF, one for other files."""


class DocumentError(ValueError):
    """The document can't be read; the message is shown to the user as is."""


class DocumentCancelled(Exception):  # noqa: N818 (a stop the user asked for, not an error)
    """Reading was cancelled."""


@dataclass(frozen=True)
class Section:
    """A run of text and where it is: a PDF's page, or the first line of a text file."""

    text: str
    page: int | None = None
    line: int | None = None


@dataclass(frozen=True)
class ParsedDocument:
    name: str
    kind: str  # pdf | docx | html | csv | text
    sections: tuple[Section, ...]
    pages: int = 0

    @property
    def chars(self) -> int:
        return sum(len(s.text) for s in self.sections)

    @property
    def text(self) -> str:
        return "\n\n".join(s.text for s in self.sections if s.text)


def parse_document(
    path: Path, *, cancel: threading.Event | None = None, progress: Progress | None = None
) -> ParsedDocument:
    """Read ``path``; a ``DocumentError`` says why it can't be, ``DocumentCancelled`` that
    ``cancel`` was set."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DocumentError(f"{path.name} can't be read: {exc.strerror or exc}.") from exc
    if size > MAX_FILE_BYTES:
        raise DocumentError(
            f"{path.name} is {size / 2**20:,.0f} MB; attachments can be at most "
            f"{MAX_FILE_BYTES // 2**20} MB. Attach a part of it, or a text export."
        )
    suffix = path.suffix.lower()
    report = progress or (lambda _done, _total: None)
    if suffix == ".pdf":
        return _pdf(path, cancel, report)
    if suffix == ".docx":
        document = _docx(path)
    elif suffix in HTML_SUFFIXES:
        document = ParsedDocument(path.name, "html", (Section(_html_text(_decoded(path)), line=1),))
    elif suffix in CSV_SUFFIXES:
        document = ParsedDocument(path.name, "csv", _csv_sections(_decoded(path), suffix))
    elif suffix in TEXT_SUFFIXES or not suffix:
        document = ParsedDocument(path.name, "text", _line_sections(_decoded(path)))
    else:
        raise DocumentError(
            f"{path.name}: {suffix} files can't be attached. Hearth reads PDF, DOCX, "
            "Markdown, text, code, CSV and HTML."
        )
    report(1, 1)
    return document


def _decoded(path: Path) -> str:
    data = path.read_bytes()
    if b"\x00" in data[:65536]:
        raise DocumentError(f"{path.name} is not text (it holds binary data).")
    for encoding in ("utf-8-sig", "utf-16"):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        if encoding == "utf-16" and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
            continue  # without a byte-order mark, "UTF-16" would read any junk
        return text
    text = data.decode("utf-8", errors="replace")
    if text.count("\ufffd") > max(16, len(text) // 100):
        raise DocumentError(f"{path.name} is not text Hearth can read (not UTF-8).")
    return text


def _line_sections(text: str, lines_per_section: int = 40) -> tuple[Section, ...]:
    """Text in runs of lines, each knowing its first line number."""
    lines = text.splitlines()
    return tuple(
        Section("\n".join(lines[i : i + lines_per_section]), line=i + 1)
        for i in range(0, len(lines), lines_per_section)
    )


def _csv_sections(text: str, suffix: str) -> tuple[Section, ...]:
    delimiter = "\t" if suffix == ".tsv" else ","
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    header = rows[0] if rows else []
    sections = []
    for start in range(1, len(rows), 25):  # the header repeated, so each passage reads alone
        body = rows[start : start + 25]
        lines = [", ".join(header)] + [", ".join(row) for row in body]
        sections.append(Section("\n".join(lines), line=start + 1))
    return tuple(sections) or (Section(", ".join(header), line=1),)


class _TextOfHtml(HTMLParser):
    _SKIP = {"script", "style", "noscript", "template"}
    _BREAK = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "table"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skipping += 1
        elif tag in self._BREAK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self._skipping:
            self._skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def _html_text(html: str) -> str:
    parser = _TextOfHtml()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)


def _pdf(path: Path, cancel: threading.Event | None, report: Progress) -> ParsedDocument:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(path)
        if reader.is_encrypted:
            raise DocumentError(
                f"{path.name} is password-protected. Save an unprotected copy and attach that."
            )
        total = len(reader.pages)
    except DocumentError:
        raise
    except (PdfReadError, OSError, ValueError, KeyError, TypeError) as exc:
        log.info("PDF %s does not open: %s", path, exc)
        raise DocumentError(f"{path.name} is damaged or not a PDF, and can't be read.") from None
    sections = []
    for number in range(total):
        if cancel is not None and cancel.is_set():
            raise DocumentCancelled
        try:
            text = reader.pages[number].extract_text() or ""
        except Exception as exc:  # one bad page: keep the rest, say which
            log.info("PDF %s page %d does not read: %s", path, number + 1, exc)
            text = ""
        sections.append(Section(text.strip(), page=number + 1))
        report(number + 1, total)
    if not any(s.text for s in sections):
        raise DocumentError(
            f"{path.name} has no text to read (it may be scanned images). Hearth doesn't "
            "read text from pictures yet."
        )
    return ParsedDocument(path.name, "pdf", tuple(sections), pages=total)


def _docx(path: Path) -> ParsedDocument:
    _check_zip(path)
    import docx

    try:
        document = docx.Document(str(path))
    except Exception as exc:  # python-docx raises many kinds for a broken package
        log.info("DOCX %s does not open: %s", path, exc)
        raise DocumentError(f"{path.name} is damaged or not a Word document.") from None
    paragraphs = [p.text for p in document.paragraphs]
    for table in document.tables:
        for row in table.rows:
            paragraphs.append(" | ".join(cell.text for cell in row.cells))
    text = "\n".join(p for p in paragraphs if p.strip())
    return ParsedDocument(path.name, "docx", _line_sections(text))


def _check_zip(path: Path) -> None:
    """Refuse a DOCX that would unpack to far more than it is, before anything unpacks
    it (zipfile stops each part at its declared size, so the declared sizes bound it)."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise DocumentError(f"{path.name} is damaged or not a Word document.") from exc
    total = sum(m.file_size for m in members)
    ratio = max((m.file_size / max(m.compress_size, 1) for m in members), default=0)
    if total > MAX_UNPACKED_BYTES or (ratio > MAX_PACK_RATIO and total > 16 * 2**20):
        raise DocumentError(
            f"{path.name} would unpack to {total / 2**20:,.0f} MB: it looks like a zip bomb, "
            "and is not opened."
        )
