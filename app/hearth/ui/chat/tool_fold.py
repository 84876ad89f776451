"""Tool calls folded in a reply: one line each, "▸ Called add · toy · 0.31 s · allowed
once" (what happened, the tool, its server, the time taken, how it was allowed), and
when opened, the call's full arguments and its result.

Drawn into the transcript's document at the point of the reply where the model made
the calls (``ToolCallRecord.offset``): after the text that came before them, before
the text that came after. The line is a link (``toolcall:MESSAGE:CALL``); clicking it
opens or folds that call (the chat redraws the conversation, as for reasoning).
"""

from __future__ import annotations

from PySide6.QtGui import (
    QColor,
    QFontDatabase,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
)

from hearth.chats import ToolCallRecord, ToolOutcome
from hearth.chats.tool_calls import approval_text, pretty_arguments
from hearth.ui.style.tokens import Tokens

TOOL_SCHEME = "toolcall:"  # toolcall:MESSAGE_INDEX:CALL_INDEX
RESULT_CHARS = 20_000  # an opened result shows this much; the rest is counted
_VERBS = {
    ToolOutcome.OK: "Called",
    ToolOutcome.ERROR: "Failed",
    ToolOutcome.DENIED: "Denied",
    ToolOutcome.STOPPED: "Stopped",
}


def fold_label(call: ToolCallRecord) -> str:
    """The folded line: what happened, which tool of which server, the time taken, and
    how it was allowed."""
    took = f" · {call.seconds:.2f} s" if call.seconds is not None else ""
    server = f" · {call.server}" if call.server else ""
    allowed = f" · {approval_text(call)}" if approval_text(call) else ""
    return f"{_VERBS[call.outcome]} {call.tool}{server}{took}{allowed}"


def draw_tool_calls(
    cursor: QTextCursor,
    t: Tokens,
    message: int,
    calls: list[tuple[int, ToolCallRecord]],
    opened: frozenset[int],
) -> None:
    """The folds of ``calls`` (each with its index in the reply) at ``cursor``, the
    document's end; an empty block follows, for the text after them."""
    if cursor.block().length() > 1:
        cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
    line = QTextBlockFormat()
    line.setTopMargin(4)
    body = QTextBlockFormat()
    body.setLeftMargin(14)
    mono = QTextCharFormat()
    mono.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    mono.setForeground(QColor(t.text_muted))
    heading = QTextCharFormat()
    heading.setForeground(QColor(t.text_muted))
    for n, (index, call) in enumerate(calls):
        if n:
            cursor.insertBlock(line, QTextCharFormat())
        else:
            cursor.setBlockFormat(line)
        is_open = index in opened
        link = QTextCharFormat()
        link.setAnchor(True)
        link.setAnchorHref(f"{TOOL_SCHEME}{message}:{index}")
        danger = call.outcome in (ToolOutcome.ERROR, ToolOutcome.DENIED)
        link.setForeground(QColor(t.danger if danger else t.accent))
        link.setToolTip("Show the arguments and the result" if not is_open else "Fold")
        cursor.insertText(f"{'▾' if is_open else '▸'} {fold_label(call)}", link)
        if not is_open:
            continue
        shown = (("Arguments", pretty_arguments(call.arguments)), ("Result", _result(call)))
        for title, text in shown:
            cursor.insertBlock(body, heading)
            cursor.insertText(title, heading)
            for text_line in text.splitlines() or [""]:
                cursor.insertBlock(body, mono)
                cursor.insertText(text_line, mono)
    cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())


def _result(call: ToolCallRecord) -> str:
    text = call.result
    if len(text) <= RESULT_CHARS:
        return text
    return f"{text[:RESULT_CHARS]}\n… ({len(text) - RESULT_CHARS:,} more characters)"


def steps(calls: tuple[ToolCallRecord, ...]) -> list[tuple[int, list[tuple[int, ToolCallRecord]]]]:
    """The calls grouped by the place in the text where they came: (offset, calls)."""
    out: list[tuple[int, list[tuple[int, ToolCallRecord]]]] = []
    for index, call in enumerate(calls):
        if out and out[-1][0] == call.offset:
            out[-1][1].append((index, call))
        else:
            out.append((call.offset, [(index, call)]))
    return out
