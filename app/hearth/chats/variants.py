"""Reply variants: the SQL behind regenerations kept side by side (< 1/3 >).

A group is the first reply plus every row whose ``variant_of`` names it; exactly one
row of a group is shown (``hidden = 0``). These helpers run inside the store's lock
and transaction, on its connection; ``ChatStore`` is their only caller.
"""

from __future__ import annotations

import sqlite3

_GROUP = "(id = :root OR variant_of = :root)"


def group_root(conn: sqlite3.Connection, message_id: int) -> int | None:
    """The id of the first reply of ``message_id``'s group (None: no such message)."""
    row = conn.execute(
        "SELECT COALESCE(variant_of, id) FROM messages WHERE id = ?", (message_id,)
    ).fetchone()
    return int(row[0]) if row else None


def group_ids(conn: sqlite3.Connection, root: int) -> list[int]:
    rows = conn.execute(f"SELECT id FROM messages WHERE {_GROUP} ORDER BY id", {"root": root})
    return [int(r[0]) for r in rows.fetchall()]


def show_only(conn: sqlite3.Connection, root: int, shown: int) -> None:
    """Hide every variant of group ``root`` but ``shown``."""
    conn.execute(
        f"UPDATE messages SET hidden = (id != :shown) WHERE {_GROUP}",
        {"root": root, "shown": shown},
    )


def positions(conn: sqlite3.Connection, conversation_id: int) -> dict[int, tuple[int, int]]:
    """For each group of the conversation with more than one variant: the shown row's
    id -> (its index among the group's variants, how many there are)."""
    rows = conn.execute(
        "SELECT COALESCE(variant_of, id) AS root, id, hidden FROM messages"
        " WHERE conversation_id = ? AND role = 'assistant' ORDER BY id",
        (conversation_id,),
    ).fetchall()
    groups: dict[int, list[tuple[int, int]]] = {}
    for root, mid, hidden in rows:
        groups.setdefault(int(root), []).append((int(mid), int(hidden)))
    out: dict[int, tuple[int, int]] = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        for index, (mid, hidden) in enumerate(members):
            if not hidden:
                out[mid] = (index, len(members))
    return out
