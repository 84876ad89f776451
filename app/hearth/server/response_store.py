"""Stored OpenAI Responses, so that ``previous_response_id`` can continue a conversation.

A client that continues by id sends only its new input; the server must remember the
rest: every input item the stored response was made from (earlier turns included, already
resolved) and the output items it produced. Each row holds that whole conversation, so a
continuation needs one read and an old row can be dropped without breaking a newer one.

The store is bounded so it cannot grow without limit on a user's disk: the newest
``MAX_RESPONSES`` are kept, none older than ``MAX_AGE_S``; both are pruned on every write.
SQLite in WAL mode; one connection, owned here and used under a lock from worker threads
(the async methods run the blocking calls off the event loop).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MAX_RESPONSES = 1000
"""Rows kept: a continuation refers to a recent response; agents make hundreds a session."""
MAX_AGE_S = 30 * 24 * 3600.0
"""A stored response older than this (30 days, OpenAI's own retention) is dropped."""
FILE_NAME = "responses.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    input_items TEXT NOT NULL,
    response TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_created ON responses (created_at);
"""


@dataclass(frozen=True)
class StoredResponse:
    """One stored response: the conversation it was made from, and the response object
    (status, model, instructions, output items, usage ...) as it was returned."""

    id: str
    created_at: float
    input_items: list[dict[str, Any]]
    response: dict[str, Any]

    @property
    def output_items(self) -> list[dict[str, Any]]:
        output = self.response.get("output")
        return list(output) if isinstance(output, list) else []

    def conversation(self) -> list[dict[str, Any]]:
        """What a continuation starts from: all its input, then its output."""
        return [*self.input_items, *self.output_items]


class ResponseStore:
    """The stored responses of one worker (``responses.db`` in the data folder)."""

    def __init__(
        self, path: Path, *, max_responses: int = MAX_RESPONSES, max_age_s: float = MAX_AGE_S
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.max_responses = max_responses
        self.max_age_s = max_age_s
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)

    # ------------------------------------------------------------ async (event loop)
    async def put(self, stored: StoredResponse) -> None:
        await asyncio.to_thread(self.put_now, stored)

    async def get(self, response_id: str) -> StoredResponse | None:
        return await asyncio.to_thread(self.get_now, response_id)

    async def delete(self, response_id: str) -> bool:
        return await asyncio.to_thread(self.delete_now, response_id)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    # ------------------------------------------------------------ blocking
    def put_now(self, stored: StoredResponse, *, now: float | None = None) -> None:
        """Keep ``stored`` (replacing one with its id), then drop what is over the bounds."""
        row = (
            stored.id,
            stored.created_at,
            json.dumps(stored.input_items, ensure_ascii=False),
            json.dumps(stored.response, ensure_ascii=False),
        )
        oldest = (time.time() if now is None else now) - self.max_age_s
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)", row)
                aged = self._conn.execute("DELETE FROM responses WHERE created_at < ?", (oldest,))
                over = self._conn.execute(
                    "DELETE FROM responses WHERE id NOT IN (SELECT id FROM responses "
                    "ORDER BY created_at DESC, rowid DESC LIMIT ?)",
                    (self.max_responses,),
                )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        if aged.rowcount > 0 or over.rowcount > 0:
            log.debug("responses pruned: %d aged, %d over the count", aged.rowcount, over.rowcount)

    def get_now(self, response_id: str, *, now: float | None = None) -> StoredResponse | None:
        """The stored response, or None (unknown, deleted, or older than the age bound)."""
        oldest = (time.time() if now is None else now) - self.max_age_s
        with self._lock:
            row = self._conn.execute(
                "SELECT id, created_at, input_items, response FROM responses "
                "WHERE id = ? AND created_at >= ?",
                (response_id, oldest),
            ).fetchone()
        if row is None:
            return None
        return StoredResponse(row[0], row[1], json.loads(row[2]), json.loads(row[3]))

    def delete_now(self, response_id: str) -> bool:
        """Drop it; False when there was nothing to drop."""
        with self._lock:
            cursor = self._conn.execute("DELETE FROM responses WHERE id = ?", (response_id,))
        return cursor.rowcount > 0

    def count(self) -> int:
        with self._lock:
            row = self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()
        return int(row[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()
