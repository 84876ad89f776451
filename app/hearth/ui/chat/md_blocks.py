"""Split streamed markdown into blocks that are final, plus a still-growing tail.

The splitter sees text as it streams and reports, in order, the parts that can no
longer change: a text block (paragraphs, lists, headings up to a blank line), and for
fenced code the opening fence, each complete line, and the closing fence. What is left
(the open text block, or the partial line of open code) is the *tail*: the renderer
re-draws only that per frame.

Splitting depends only on the text, never on how it was chunked: feeding it in any
pieces yields the same events as feeding it at once (the renderer's tests rely on it).
Plain Python; no Qt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A text block longer than this is cut at the next line start, so that a reply with no
# blank lines never makes the tail (re-rendered each frame) grow without bound.
MAX_TEXT_BLOCK_CHARS = 1200

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$")


@dataclass(frozen=True)
class TextBlock:
    source: str  # markdown, without the blank line that ended it


@dataclass(frozen=True)
class CodeStart:
    lang: str


@dataclass(frozen=True)
class CodeLine:
    text: str


@dataclass(frozen=True)
class CodeEnd:
    pass


Event = TextBlock | CodeStart | CodeLine | CodeEnd


@dataclass(frozen=True)
class Tail:
    kind: str  # "text" (markdown source) or "code" (a partial line of code)
    text: str


class BlockSplitter:
    def __init__(self) -> None:
        self._partial = ""
        self._para: list[str] = []
        self._para_chars = 0
        self._fence: str | None = None
        self.lang = ""

    @property
    def in_code(self) -> bool:
        return self._fence is not None

    def feed(self, text: str) -> list[Event]:
        events: list[Event] = []
        if "\n" not in text:
            self._partial += text
            return events
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        for line in lines:
            self._line(line.removesuffix("\r"), events)
        return events

    def finish(self) -> list[Event]:
        """The end of the message: everything left becomes final."""
        events: list[Event] = []
        if self._partial:
            self._line(self._partial.removesuffix("\r"), events)
            self._partial = ""
        self._flush_para(events)
        if self._fence is not None:
            self._fence = None
            events.append(CodeEnd())
        return events

    def tail(self) -> Tail | None:
        if self._fence is not None:
            return Tail("code", self._partial) if self._partial else None
        if not self._para and not self._partial.strip():
            return None
        return Tail("text", "\n".join([*self._para, self._partial]))

    def _line(self, line: str, events: list[Event]) -> None:
        if self._fence is not None:
            stripped = line.strip()
            if stripped.startswith(self._fence) and not stripped.strip(self._fence[0]):
                self._fence = None
                events.append(CodeEnd())
            else:
                events.append(CodeLine(line))
            return
        match = _FENCE_OPEN.match(line)
        if match is not None:
            self._flush_para(events)
            self._fence = match.group(1)
            self.lang = match.group(2).lower()
            events.append(CodeStart(self.lang))
        elif not line.strip():
            self._flush_para(events)
        else:
            if self._para_chars >= MAX_TEXT_BLOCK_CHARS:
                self._flush_para(events)
            self._para.append(line)
            self._para_chars += len(line) + 1

    def _flush_para(self, events: list[Event]) -> None:
        if self._para:
            events.append(TextBlock("\n".join(self._para)))
            self._para = []
            self._para_chars = 0


def split_all(text: str) -> list[Event]:
    """All events of a complete message (the reference for incremental feeding)."""
    splitter = BlockSplitter()
    return splitter.feed(text) + splitter.finish()
