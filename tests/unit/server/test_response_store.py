"""The Responses store on a real SQLite file: round trips, bounds, and a reopen."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

from hearth.server.response_store import MAX_AGE_S, ResponseStore, StoredResponse

DAY = 24 * 3600.0


def _stored(response_id: str, created_at: float) -> StoredResponse:
    items = [{"id": "item_1", "type": "message", "role": "user", "content": "Hi"}]
    output = [{"type": "message", "role": "assistant", "content": [{"type": "output_text",
               "text": f"reply {response_id}"}]}]  # fmt: skip
    return StoredResponse(response_id, created_at, items, {"id": response_id, "output": output})


def test_round_trip_and_conversation(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "responses.db")
    store.put_now(_stored("resp_a", 1000.0), now=1000.0)
    got = store.get_now("resp_a", now=1000.0)
    assert got == _stored("resp_a", 1000.0)
    assert [item["role"] for item in got.conversation()] == ["user", "assistant"]
    assert store.get_now("resp_missing", now=1000.0) is None
    store.close()


def test_newest_are_kept_when_over_the_count(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "responses.db", max_responses=3)
    for n in range(5):
        store.put_now(_stored(f"resp_{n}", 1000.0 + n), now=1000.0 + n)
    assert store.count() == 3
    kept = [n for n in range(5) if store.get_now(f"resp_{n}", now=1010.0) is not None]
    assert kept == [2, 3, 4]
    store.close()


def test_same_second_keeps_the_last_written(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "responses.db", max_responses=2)
    for n in range(3):
        store.put_now(_stored(f"resp_{n}", 1000.0), now=1000.0)
    assert store.get_now("resp_0", now=1000.0) is None
    assert store.get_now("resp_2", now=1000.0) is not None
    store.close()


def test_old_responses_are_dropped_on_write_and_hidden_on_read(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "responses.db")
    start = 1_000_000.0
    store.put_now(_stored("resp_old", start), now=start)
    later = start + MAX_AGE_S + DAY
    assert store.get_now("resp_old", now=later) is None  # too old to read, still on disk
    assert store.count() == 1
    store.put_now(_stored("resp_new", later), now=later)
    assert store.count() == 1 and store.get_now("resp_new", now=later) is not None
    store.close()


def test_delete(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "responses.db")
    store.put_now(_stored("resp_a", 1000.0), now=1000.0)
    assert store.delete_now("resp_a") is True
    assert store.delete_now("resp_a") is False
    assert store.get_now("resp_a", now=1000.0) is None
    store.close()


def test_survives_a_reopen_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "data" / "responses.db"
    store = ResponseStore(path)
    now = time.time()
    asyncio.run(store.put(_stored("resp_a", now)))
    asyncio.run(store.aclose())
    again = ResponseStore(path)
    assert asyncio.run(again.get("resp_a")) == _stored("resp_a", now)
    assert asyncio.run(again.delete("resp_a")) is True
    again.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
