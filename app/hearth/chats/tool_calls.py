"""The tool calls of each reply, and each chat's choice of tools, on the store's
connection (``store.tool_calls``).

A turn with tools is still one reply row: its text is every step's text in order, and
each call is a row here that says where in that text it came (``offset``). So the
transcript can draw the folded calls in their places, the conversation can be sent to
the model again as assistant/tool messages, and regenerating or deleting a reply takes
its calls with it (``ON DELETE CASCADE``).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import defaultdict
from collections.abc import Iterable

from hearth.chats.models import ApprovedBy, ToolCallRecord, ToolOutcome

# How a let-through call was approved, as the fold and the export say it (denied: the
# outcome already says so).
APPROVAL_TEXT = {
    ApprovedBy.ONCE: "allowed once",
    ApprovedBy.ALWAYS: "always allowed, from this call on",
    ApprovedBy.STANDING: "always allowed",
}

_COLS = (
    "message_id, step, offset, call_id, server, tool, arguments, result, outcome, seconds, approval"
)


class ToolCallLog:
    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn = conn
        self._lock = lock

    def add(self, message_id: int, call: ToolCallRecord) -> None:
        with self._lock:
            self._conn.execute(
                f"INSERT INTO tool_calls({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    message_id,
                    call.step,
                    call.offset,
                    call.call_id,
                    call.server,
                    call.tool,
                    call.arguments,
                    call.result,
                    call.outcome.value,
                    call.seconds,
                    call.approval.value if call.approval else None,
                ),
            )

    def set_choice(self, conversation_id: int, choice: Iterable[tuple[str, str]]) -> None:
        """The tools the chat offers its model (shown in ``Conversation.tool_choice``)."""
        text = json.dumps(sorted([server, tool] for server, tool in choice))
        with self._lock:
            self._conn.execute(
                "UPDATE conversations SET tool_choice = ? WHERE id = ?", (text, conversation_id)
            )

    def of_message(self, message_id: int) -> tuple[ToolCallRecord, ...]:
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_COLS} FROM tool_calls WHERE message_id = ? ORDER BY id", (message_id,)
            ).fetchall()
        return tuple(_record(row) for row in rows)

    def of_conversation(self, conversation_id: int) -> dict[int, tuple[ToolCallRecord, ...]]:
        """Every reply's calls in a conversation, by the reply's id."""
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {', '.join('t.' + c.strip() for c in _COLS.split(','))}"
                " FROM tool_calls t JOIN messages m ON m.id = t.message_id"
                " WHERE m.conversation_id = ? ORDER BY t.id",
                (conversation_id,),
            ).fetchall()
        calls: defaultdict[int, list[ToolCallRecord]] = defaultdict(list)
        for row in rows:
            calls[int(row["message_id"])].append(_record(row))
        return {mid: tuple(items) for mid, items in calls.items()}


def approval_text(call: ToolCallRecord) -> str:
    """How ``call`` was let through; "" when denied or never asked."""
    return APPROVAL_TEXT.get(call.approval, "") if call.approval else ""


def pretty_arguments(arguments: str) -> str:
    """JSON arguments indented for reading (as they came when they don't parse)."""
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except ValueError:
        return arguments


def _record(row: sqlite3.Row) -> ToolCallRecord:
    return ToolCallRecord(
        step=int(row["step"]),
        offset=int(row["offset"]),
        call_id=str(row["call_id"]),
        server=str(row["server"]),
        tool=str(row["tool"]),
        arguments=str(row["arguments"]),
        result=str(row["result"]),
        outcome=ToolOutcome(row["outcome"]),
        seconds=row["seconds"],
        approval=ApprovedBy(row["approval"]) if row["approval"] else None,
    )
