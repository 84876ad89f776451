"""Incremental markdown rendering into a QTextDocument, for streaming replies.

``MarkdownWriter`` appends one message at the end of a document. Text arrives with
``append()`` (cheap: it is only queued); ``render()``, called once per frame, draws it:
blocks that became final (see ``md_blocks``) are inserted once and never touched
again; only the unfinished tail (the open paragraph, or the partial line of an open
code block) is removed and redrawn. The cost of a frame is therefore bounded by the
size of the tail, not by the length of the reply.

Code blocks are drawn line by line with the theme's syntax colours (``style.tokens``)
in a shaded, padded frame, under a header with the language and a "Copy" link
(``copy:N``). While a block is open, drawing goes on at the end of its frame; after it,
the empty block Qt keeps after a frame takes what comes next.
"""

from __future__ import annotations

import html
import logging

from markdown_it import MarkdownIt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFrame,
    QTextFrameFormat,
)

from hearth.ui.chat.code_highlight import Lang, highlight_line, language
from hearth.ui.chat.md_blocks import BlockSplitter, CodeEnd, CodeLine, CodeStart, Event, TextBlock
from hearth.ui.style.tokens import LIGHT, Tokens

log = logging.getLogger(__name__)

COPY_SCHEME = "copy:"
FOLD_SCHEME = "fold:"  # fold:N folds (or shows again) code block N
CODE_INSET = 10  # px between a code block's shade and its text
QUOTE_INSET = 16  # px a blockquote is set in
FOLD_LINES = 24  # a code block longer than this gets a Fold link in its header
FOLD_WORDS = ("Fold", "Show")  # the same length: toggling never moves later text


def markdown_css(t: Tokens) -> str:
    """The transcript's CSS: every colour from the theme's tokens.

    Colours are explicit for text too (not left to the palette), so a block can never
    end up with one theme's background under the other theme's text.
    """
    return f"""
code {{ background-color: {t.inline_code_bg}; color: {t.text}; font-family: monospace; }}
pre {{ background-color: {t.code_bg}; color: {t.code_text}; font-family: monospace; }}
a {{ color: {t.accent}; }}
table {{ border-collapse: collapse; margin-top: 4px; margin-bottom: 4px; }}
th {{ background-color: {t.table_header_bg}; color: {t.text}; padding: 4px 10px;
     border: 1px solid {t.border}; }}
td {{ color: {t.text}; padding: 4px 10px; border: 1px solid {t.border}; }}
blockquote {{ color: {t.quote_text}; }}
h1, h2, h3, h4, h5, h6 {{ color: {t.text}; }}
"""


_md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def markdown_html(source: str) -> str:
    """HTML for one markdown block (raw HTML in the source is shown as text)."""
    out: str = _md.render(source)
    return out


class _Formats:
    def __init__(self, t: Tokens) -> None:
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.tokens = t
        self.text_block = QTextBlockFormat()
        self.text_block.setTopMargin(6)  # paragraphs, lists and tables apart
        self.text_char = QTextCharFormat()
        self.code_block = QTextBlockFormat()
        self.code_block.setBackground(QColor(t.code_bg))
        self.code_header = QTextBlockFormat(self.code_block)
        self.code_header.setBottomMargin(4)
        # A code block is a frame: its padding is shaded (a block's margins are not),
        # so the code sits inset in its shade, which is flush with the text column.
        self.code_frame = QTextFrameFormat()
        self.code_frame.setBackground(QColor(t.code_bg))
        self.code_frame.setBorder(0)
        self.code_frame.setPadding(CODE_INSET)
        self.code_frame.setTopMargin(8)
        self.code_frame.setBottomMargin(8)
        # A blockquote: set in, in the quote colour (the CSS). Not on a tint: a block's
        # shade reaches its text's edge, with no room around it.
        self.quote = QTextBlockFormat()
        self.quote.setLeftMargin(QUOTE_INSET)
        self.sliver = QTextCharFormat()  # an empty block in this font is ~2 px tall
        self.sliver.setFontPointSize(1)
        self.code_char = QTextCharFormat()
        self.code_char.setFont(mono)
        self.code_char.setForeground(QColor(t.code_text))  # unhighlighted tokens too
        self.header_char = QTextCharFormat()
        self.header_char.setForeground(QColor(t.code_header))
        self.header_char.setFontPointSize(max(mono.pointSizeF() - 1, 7))
        self.spans: dict[str, QTextCharFormat] = {}
        for kind, color in t.syntax.as_dict().items():
            fmt = QTextCharFormat(self.code_char)
            fmt.setForeground(QColor(color))
            if kind == "keyword":
                fmt.setFontWeight(QFont.Weight.Bold)
            self.spans[kind] = fmt

    def link(self, href: str) -> QTextCharFormat:
        fmt = QTextCharFormat(self.header_char)
        fmt.setAnchor(True)
        fmt.setAnchorHref(href)
        fmt.setForeground(QColor(self.tokens.accent))
        fmt.setFontUnderline(True)
        return fmt


_formats: dict[str, _Formats] = {}  # per theme; a cache of immutable formats, not state


def _fmts(t: Tokens) -> _Formats:
    found = _formats.get(t.name)
    if found is None or found.tokens is not t:
        found = _formats[t.name] = _Formats(t)  # needs a QGuiApplication (fonts)
    return found


def prepare_document(doc: QTextDocument, t: Tokens = LIGHT) -> None:
    """Settings a transcript document needs for fast appends and our HTML."""
    doc.setUndoRedoEnabled(False)
    doc.setDefaultStyleSheet(markdown_css(t))


class MarkdownWriter:
    """Renders one markdown message at the end of ``doc``; see the module docstring.

    ``code_blocks`` (shared by all writers of a transcript) receives the text of each
    code block; the header link ``copy:N`` refers to ``code_blocks[N]``.
    """

    def __init__(
        self,
        doc: QTextDocument,
        code_blocks: list[list[str]],
        *,
        reuse_last_block: bool = False,
        tokens: Tokens = LIGHT,
        code_headers: dict[int, int] | None = None,
        frame: QTextFrame | None = None,
    ) -> None:
        """``reuse_last_block``: the document ends with an empty block made for this
        message; the first thing drawn goes there instead of into a new block.
        ``tokens``: the theme's colours (code blocks; the CSS is the document's).
        ``frame``: draw at the end of this frame (the user's bubble), not the document's."""
        self.doc = doc
        self._frame = frame
        self._code_frame: QTextFrame | None = None
        self._f = _fmts(tokens)
        self._reuse = reuse_last_block
        self._tail_reused = False
        self.code_blocks = code_blocks
        # code block index -> position of its header (for Fold; shared like code_blocks)
        self.code_headers = code_headers if code_headers is not None else {}
        self._splitter = BlockSplitter()
        self._pending: list[str] = []
        self._tail_start: int | None = None
        self._lang: Lang = language("")
        self._code_state: str | None = None
        self._code_index = -1
        self.finished = False
        self.blocks_rendered = 0  # final blocks drawn (each exactly once)
        self.frames = 0

    # ------------------------------------------------------------------ feeding
    def append(self, text: str) -> None:
        self._pending.append(text)

    @property
    def has_pending(self) -> bool:
        return bool(self._pending)

    def render(self) -> bool:
        """Draw what arrived since the last call; False when there was nothing."""
        if not self._pending or self.finished:
            return False
        text = "".join(self._pending)
        self._pending.clear()
        events = self._splitter.feed(text)
        cursor = self._end_cursor()
        cursor.beginEditBlock()
        self._remove_tail(cursor)
        for event in events:
            self._draw(cursor, event)
        self._draw_tail(cursor)
        cursor.endEditBlock()
        self.frames += 1
        return True

    def finish(self) -> None:
        """The message is complete: draw everything as final (no tail left)."""
        if self.finished:
            return
        text = "".join(self._pending)
        self._pending.clear()
        events = self._splitter.feed(text) + self._splitter.finish()
        cursor = self._end_cursor()
        cursor.beginEditBlock()
        self._remove_tail(cursor)
        for event in events:
            self._draw(cursor, event)
        if self._frame is not None and self._reuse:
            # The message (in a bubble) ends with a code block: the empty block Qt keeps
            # after that frame stays inside the bubble; made a sliver, not a blank line.
            cursor.setPosition(self._end())
            if cursor.block().length() == 1:
                cursor.setBlockFormat(QTextBlockFormat())
                cursor.setBlockCharFormat(self._f.sliver)
        cursor.endEditBlock()
        self.finished = True

    def set_text(self, text: str) -> None:
        """Draw a whole (historic) message at once."""
        self.append(text)
        self.finish()

    # ------------------------------------------------------------------ drawing
    def _end(self) -> int:
        """Where drawing goes on: the open code block's frame, else the end of the
        message's frame (the user's bubble), else of the document."""
        if self._code_frame is not None:
            return self._code_frame.lastPosition()
        if self._frame is not None:
            return self._frame.lastPosition()
        return self.doc.characterCount() - 1

    def _end_cursor(self) -> QTextCursor:
        cursor = QTextCursor(self.doc)
        cursor.setPosition(self._end())
        return cursor

    def _remove_tail(self, cursor: QTextCursor) -> None:
        if self._tail_start is None:
            return
        cursor.setPosition(self._tail_start)
        # Removing the tail's block separator would hand the tail's block format to the
        # block above it (a code block's last line, or its padding, losing its shade).
        keep = cursor.blockFormat()
        cursor.setPosition(self._end(), QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        if not self._tail_reused:
            cursor.setBlockFormat(keep)
        self._tail_start = None
        self._reuse = self._tail_reused

    def _new_block(
        self, cursor: QTextCursor, block: QTextBlockFormat, char: QTextCharFormat
    ) -> bool:
        """Start a block at the end; True when the reserved empty block was used."""
        if self._reuse and cursor.block().length() == 1:
            self._reuse = False
            cursor.setBlockFormat(block)
            cursor.setBlockCharFormat(char)
            cursor.setCharFormat(char)
            return True
        self._reuse = False
        cursor.insertBlock(block, char)
        return False

    def _draw(self, cursor: QTextCursor, event: Event) -> None:
        f = self._f
        cursor.setPosition(self._end())
        if isinstance(event, TextBlock):
            self._draw_text(cursor, event.source, tail=False)
        elif isinstance(event, CodeStart):
            self.code_blocks.append([])
            self._code_index = len(self.code_blocks) - 1
            self._lang = language(event.lang)
            self._code_state = None
            self._code_frame = cursor.insertFrame(f.code_frame)  # in its (empty) block
            cursor.setBlockFormat(f.code_header)
            cursor.setBlockCharFormat(f.header_char)
            self.code_headers[self._code_index] = cursor.block().position()
            cursor.insertText(f"{event.lang or 'code'}   ", f.header_char)
            cursor.insertText("Copy", f.link(f"{COPY_SCHEME}{self._code_index}"))
        elif isinstance(event, CodeLine):
            self.code_blocks[self._code_index].append(event.text)
            self._code_state = self._draw_code_line(cursor, event.text, self._code_state)
        elif isinstance(event, CodeEnd):
            self._code_state = None
            self._code_frame = None
            self._reuse = True  # Qt keeps an empty block after a frame: the next goes there
            if len(self.code_blocks[self._code_index]) > FOLD_LINES:
                self._add_fold_link(self._code_index)
        self.blocks_rendered += 1

    def _add_fold_link(self, index: int) -> None:
        """A long block's header gets "Fold" (drawn while no tail is on screen, so no
        position this writer keeps moves)."""
        header = self.doc.findBlock(self.code_headers[index])
        cursor = QTextCursor(header)
        cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock)
        cursor.insertText("   ", self._f.header_char)
        cursor.insertText(FOLD_WORDS[0], self._f.link(f"{FOLD_SCHEME}{index}"))

    def _draw_code_line(self, cursor: QTextCursor, line: str, state: str | None) -> str | None:
        f = self._f
        self._tail_reused = self._new_block(cursor, f.code_block, f.code_char)
        spans, state = highlight_line(line, self._lang, state)
        pos = 0
        for start, length, kind in spans:
            if start > pos:
                cursor.insertText(line[pos:start], f.code_char)
            cursor.insertText(line[start : start + length], f.spans[kind])
            pos = start + length
        if pos < len(line):
            cursor.insertText(line[pos:], f.code_char)
        return state

    def _draw_tail(self, cursor: QTextCursor) -> None:
        tail = self._splitter.tail()
        if tail is None:
            return
        cursor.setPosition(self._end())
        self._tail_start = cursor.position()
        if tail.kind == "code":
            self._draw_code_line(cursor, tail.text, self._code_state)
        else:
            self._draw_text(cursor, tail.text, tail=True)

    def _draw_text(self, cursor: QTextCursor, source: str, *, tail: bool) -> None:
        """A markdown text block at the end. A list or table HTML opens with its own
        block, which would leave the one made for it empty (a blank line above every
        list): that one is dropped. A blockquote is set in."""
        f = self._f
        reused = self._new_block(cursor, f.text_block, f.text_char)
        if tail:
            self._tail_reused = reused
        start = cursor.block()
        first = start.position()  # where this block's text begins, either way
        cursor.insertHtml(markdown_html(source))
        if not reused and start.length() == 1 and start.next().isValid():
            QTextCursor(start).deletePreviousChar()  # the separator: the block above stays
        if source.lstrip().startswith(">"):
            block = self.doc.findBlock(first)
            while block.isValid():
                QTextCursor(block).mergeBlockFormat(f.quote)
                block = block.next()


def plain_html(text: str) -> str:
    """A user's message: shown as typed (escaped, line breaks kept)."""
    return html.escape(text).replace("\n", "<br>")


def toggle_fold(doc: QTextDocument, header_pos: int, lines: int) -> bool:
    """Fold (hide) or show the ``lines`` lines of the code block whose header starts at
    ``header_pos``; the header's link says what a click does next. True: now folded."""
    header = doc.findBlock(header_pos)
    block, fold = header.next(), header.next().isVisible()
    for _ in range(lines):
        if not block.isValid():
            break
        block.setVisible(not fold)
        block = block.next()
    word = header.text().rfind(FOLD_WORDS[0] if fold else FOLD_WORDS[1])
    if word >= 0:
        cursor = QTextCursor(header)
        cursor.setPosition(header.position() + word)
        cursor.movePosition(
            QTextCursor.MoveOperation.Right, QTextCursor.MoveMode.KeepAnchor, len(FOLD_WORDS[0])
        )
        fmt = cursor.charFormat()
        cursor.insertText(FOLD_WORDS[1] if fold else FOLD_WORDS[0], fmt)
    end = block.position() if block.isValid() else doc.characterCount() - 1
    doc.markContentsDirty(header.position(), end - header.position())
    return fold
