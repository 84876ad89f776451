"""Full-text search over the chat history: what the sidebar's search box finds.

The FTS5 tables (``conversations_fts`` on titles, ``messages_fts`` on message text) are
kept in step by the triggers of ``schema.py``; this module only reads them. Two things
live here and nowhere else: how what a user typed becomes a safe FTS5 query, and how
title and message matches merge into one hit per conversation. It runs on the store's
connection, under its lock (``ChatStore.search`` is the caller).
"""

from __future__ import annotations

import re
import sqlite3

from hearth.chats.models import SearchHit


def fts_query(text: str) -> str | None:
    """A safe FTS5 query for what a user typed: every word, as a prefix, all required."""
    words = re.findall(r"\w+", text, flags=re.UNICODE)
    if not words:
        return None
    return " ".join(f'"{w}"*' for w in words)


def search(conn: sqlite3.Connection, query: str, limit: int) -> list[SearchHit]:
    """Conversations whose title or messages match every word (prefixes) of ``query``.

    Title matches come first, then message matches by relevance; one hit per
    conversation, with a snippet that wraps the matched words in [ ].
    """
    match = fts_query(query)
    if match is None:
        return []
    titles = conn.execute(
        "SELECT c.id, c.title, highlight(conversations_fts, 0, '[', ']') AS snip,"
        " c.updated FROM conversations_fts JOIN conversations c"
        " ON c.id = conversations_fts.rowid WHERE conversations_fts MATCH ?"
        " ORDER BY bm25(conversations_fts) LIMIT ?",
        (match, limit),
    ).fetchall()
    bodies = conn.execute(
        "SELECT m.conversation_id AS id, c.title, m.id AS mid, c.updated,"
        " snippet(messages_fts, 0, '[', ']', '…', 12) AS snip"
        " FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid"
        " JOIN conversations c ON c.id = m.conversation_id"
        " WHERE messages_fts MATCH ? ORDER BY bm25(messages_fts) LIMIT ?",
        (match, limit * 4),
    ).fetchall()
    hits: dict[int, SearchHit] = {}
    for row in titles:
        hits.setdefault(
            row["id"], SearchHit(row["id"], row["title"], row["snip"], None, row["updated"])
        )
    for row in bodies:
        hits.setdefault(
            row["id"],
            SearchHit(row["id"], row["title"], row["snip"], row["mid"], row["updated"]),
        )
    return list(hits.values())[:limit]
