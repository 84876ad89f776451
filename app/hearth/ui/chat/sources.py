"""A reply's sources: the passages of the chat's documents it was given, folded under it.

"▸ Sources (3)" is a link that folds them open: one line per passage, its file and page
or line, each a link that opens the passage's text in a small window (not modal, so
the chat goes on). Drawn into the transcript's document like the reasoning fold.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtGui import QColor, QTextBlockFormat, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QDialog, QTextBrowser, QVBoxLayout, QWidget

from hearth.chats.attachments import PassageHit
from hearth.ui.chat.message_card import CARD_SCHEME
from hearth.ui.style.tokens import Tokens

SOURCE_SCHEME = "source:"  # source:MESSAGE:PASSAGE opens that passage's text


def sources_label(count: int, open_: bool) -> str:
    return f"{'▾' if open_ else '▸'} Sources ({count})"


def draw_sources(
    cursor: QTextCursor, t: Tokens, index: int, sources: Sequence[PassageHit], open_: bool
) -> None:
    """The fold after reply ``index`` at ``cursor`` (the document's end)."""
    link = QTextCharFormat()
    link.setAnchor(True)
    link.setForeground(QColor(t.accent))
    block = QTextBlockFormat()
    block.setTopMargin(6)
    cursor.insertBlock(block, QTextCharFormat())
    link.setAnchorHref(f"{CARD_SCHEME}sources:{index}")
    cursor.insertText(sources_label(len(sources), open_), link)
    if not open_:
        return
    item = QTextBlockFormat()
    item.setLeftMargin(14)
    for number, source in enumerate(sources):
        cursor.insertBlock(item, QTextCharFormat())
        link.setAnchorHref(f"{SOURCE_SCHEME}{index}:{number}")
        cursor.insertText(f"[{number + 1}] {source.where}", link)


def parse_source_link(href: str) -> tuple[int, int] | None:
    """(message index, passage index) of a ``source:`` link."""
    message, _, passage = href[len(SOURCE_SCHEME) :].partition(":")
    if not (message.isdigit() and passage.isdigit()):
        return None
    return int(message), int(passage)


class PassageWindow(QDialog):
    """One passage's text and where it is from."""

    def __init__(self, source: PassageHit, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("passageWindow")
        self.setWindowTitle(source.where)
        self.setModal(False)
        self.text = QTextBrowser(self)
        self.text.setObjectName("passageText")
        self.text.setPlainText(source.text)
        layout = QVBoxLayout(self)
        layout.addWidget(self.text)
        self.resize(560, 420)
