"""Exports with tool calls and document sources, from a real SQLite store: the Markdown
folds each call where it came in its reply and lists each reply's sources; the JSON
keeps both whole. Calls kept before the approval column read back as "not asked"."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from hearth.chats import ApprovedBy, ChatStore, ToolCallRecord, ToolOutcome
from hearth.chats.attachments import PassageHit
from hearth.chats.schema import migrate

RESULT = '{"datetime": "12:00", "note": "```fenced```"}'  # a fence inside
LONG = "The treaty was signed in 1648 at Münster. " * 10  # over the Markdown's excerpt


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ChatStore]:
    s = ChatStore(tmp_path / "chats.db")
    yield s
    s.close()


def _chat(store: ChatStore) -> tuple[int, int]:
    """A chat whose reply called two tools (one denied) and was given two passages."""
    conv = store.create_conversation("Tools and sources")
    store.add_message(conv.id, "user", "What time is it, and when was the treaty?")
    reply = store.add_message(conv.id, "assistant", "Let me check.It is noon; 1648.")
    store.tool_calls.add(
        reply.id,
        ToolCallRecord(0, 13, "c1", "time", "get_current_time", '{"timezone":"UTC"}',
                       RESULT, ToolOutcome.OK, 0.25,
                       ApprovedBy.ONCE),
    )  # fmt: skip
    store.tool_calls.add(
        reply.id,
        ToolCallRecord(0, 13, "c2", "toy", "add", "not json", "The user denied this tool call.",
                       ToolOutcome.DENIED, None, ApprovedBy.DENIED),
    )  # fmt: skip
    store.attachments.add_sources(reply.id, [
        PassageHit(0, "history.pdf", LONG, 3, None, 0.9),
        PassageHit(0, "notes.md", "Noon is 12:00.", None, 12, 0.5),
    ])  # fmt: skip
    return conv.id, reply.id


def test_markdown_folds_each_call_where_it_came(store: ChatStore) -> None:
    cid, _ = _chat(store)
    md = store.export_markdown(cid)
    before, after = md.index("Let me check."), md.index("It is noon; 1648.")
    first = md.index("<summary>Tool call: get_current_time · time · ok · 0.25 s · allowed once")
    second = md.index("<summary>Tool call: add · toy · denied</summary>")
    assert before < first < second < after  # in their place in the reply's text
    # The arguments as the approval dialog shows them; a result with a fence in it
    # gets a longer fence, so the fold stays one block.
    assert '```json\n{\n  "timezone": "UTC"\n}\n```' in md
    assert '````\n{"datetime": "12:00", "note": "```fenced```"}\n````' in md
    assert "```\nnot json\n```" in md  # not JSON: as the model wrote it
    assert md.count("<details>") == md.count("</details>") == 3


def test_markdown_lists_a_replys_sources_folded(store: ChatStore) -> None:
    cid, _ = _chat(store)
    md = store.export_markdown(cid)
    assert "<summary>Sources (2)</summary>" in md
    assert md.index("It is noon; 1648.") < md.index("<summary>Sources (2)</summary>")
    (pdf,) = [line for line in md.splitlines() if line.startswith("- **history.pdf, page 3**")]
    assert pdf.endswith("…") and len(pdf) < len(LONG)  # the opening words, not the page
    assert "- **notes.md, line 12**: Noon is 12:00." in md
    assert md.count("Sources (") == 1  # the question has none


def test_json_keeps_calls_and_sources_whole(store: ChatStore) -> None:
    cid, _ = _chat(store)
    data = json.loads(store.export_json(cid))
    question, reply = data["messages"]
    assert "tool_calls" not in question and "sources" not in question
    assert reply["tool_calls"] == [
        {"step": 0, "offset": 13, "call_id": "c1", "server": "time", "tool": "get_current_time",
         "arguments": '{"timezone":"UTC"}', "result": RESULT,
         "outcome": "ok", "seconds": 0.25, "approval": "once"},
        {"step": 0, "offset": 13, "call_id": "c2", "server": "toy", "tool": "add",
         "arguments": "not json", "result": "The user denied this tool call.",
         "outcome": "denied", "seconds": None, "approval": "denied"},
    ]  # fmt: skip
    assert reply["sources"] == [
        {"name": "history.pdf", "page": 3, "line": None, "text": LONG},
        {"name": "notes.md", "page": None, "line": 12, "text": "Noon is 12:00."},
    ]


def test_calls_kept_before_the_approval_column_read_as_not_asked(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, target=8)  # the schema that first kept tool calls
    conn.execute("INSERT INTO conversations(title, created, updated) VALUES ('old', 0, 0)")
    conn.execute("INSERT INTO messages(conversation_id, role, content, created)"
                 " VALUES (1, 'assistant', 'It is noon.', 0)")  # fmt: skip
    conn.execute("INSERT INTO tool_calls(message_id, step, offset, call_id, server, tool,"
                 " arguments, result, outcome, seconds) VALUES (1, 0, 0, 'c', 'time',"
                 " 'get_current_time', '{}', 'noon', 'ok', 0.5)")  # fmt: skip
    conn.close()
    store = ChatStore(path)
    try:
        (message,) = store.messages(1)
        (call,) = message.tool_calls
        assert call.approval is None and call.result == "noon"
        assert "<summary>Tool call: get_current_time · time · ok · 0.50 s</summary>" in (
            store.export_markdown(1)
        )
        assert json.loads(store.export_json(1))["messages"][0]["tool_calls"][0]["approval"] is None
    finally:
        store.close()
