"""The chat store: schema and migrations, messages, FTS search, presets, recovery."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from hearth.chats import (
    AsyncChatStore,
    ChatStore,
    ChatStoreError,
    MessageStatus,
    ReplyRecorder,
    ReplyStats,
    SamplingSettings,
)
from hearth.chats.schema import LATEST_VERSION, SchemaTooNewError, migrate
from hearth.chats.search import fts_query
from hearth.chats.store import RECOVERED_DETAIL
from hearth.config.paths import default_paths


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ChatStore]:
    s = ChatStore(tmp_path / "chats.db")
    yield s
    s.close()


def test_pragmas_and_version(store: ChatStore) -> None:
    conn = sqlite3.connect(store.path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == LATEST_VERSION
    conn.close()
    assert store.schema_version == LATEST_VERSION
    # Foreign keys are on: deleting a conversation deletes its messages.
    conv = store.create_conversation("x")
    store.add_message(conv.id, "user", "hello")
    store.delete_conversation(conv.id)
    assert store.messages(conv.id) == []
    assert store.search("hello") == []


def test_default_location_is_app_paths() -> None:
    path = default_paths().chats_db
    s = ChatStore(path)
    s.close()
    assert path.exists()


def test_migration_from_v1_backfills_search(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    assert migrate(conn, target=1) == 1
    conn.execute(
        "INSERT INTO conversations(id, title, created, updated) VALUES (1, 'Old trip', 1, 1)"
    )
    conn.execute(
        "INSERT INTO messages(conversation_id, role, content, created, status)"
        " VALUES (1, 'user', 'packing list for norway', 1, 'complete'),"
        " (1, 'assistant', 'half written norway', 2, 'streaming')"
    )
    conn.close()
    store = ChatStore(path)
    assert store.schema_version == LATEST_VERSION
    assert store.recovered == 1
    hits = store.search("norway")
    assert [h.conversation_id for h in hits] == [1]
    assert store.search("trip")[0].message_id is None  # the title matched
    # The recovered reply is searchable too, and stays consistent when changed.
    assert store.search("half")[0].conversation_id == 1
    store.delete_conversation(1)
    assert store.search("norway") == []
    assert store.search("half") == []
    store.close()


def test_migration_from_v3_adds_draft_counts_and_keeps_every_reply(tmp_path: Path) -> None:
    """Schema 4 keeps speculative decoding's counts with each reply (issue 16). A v3
    database, written as v3 wrote it (stats, model, reasoning, a hidden variant, a
    reply left streaming), comes through with every row and column intact."""
    path = tmp_path / "v3.db"
    conn = sqlite3.connect(path, isolation_level=None)
    assert migrate(conn, target=3) == 3
    columns = {r[1] for r in conn.execute("PRAGMA table_info(messages)")}
    assert "draft_tokens" not in columns and "accepted_tokens" not in columns
    conn.execute(
        "INSERT INTO conversations(id, title, created, updated, model)"
        " VALUES (1, 'Spec trip', 1, 1, 'tiny')"
    )
    conn.execute(
        "INSERT INTO messages(id, conversation_id, role, content, created, status,"
        " prompt_tokens, completion_tokens, cached_tokens, tokens_per_s, ttft_ms, model,"
        " reasoning, reasoning_ms, variant_of, hidden) VALUES"
        " (1, 1, 'user', 'plan a fjord hike', 1, 'complete',"
        "  NULL, NULL, NULL, NULL, NULL, NULL, '', NULL, NULL, 0),"
        " (2, 1, 'assistant', 'first try', 2, 'complete',"
        "  9, 4, 0, 20.0, 30.0, 'tiny', '', NULL, NULL, 1),"
        " (3, 1, 'assistant', 'second try', 3, 'complete',"
        "  9, 6, 8, 42.5, 12.0, 'gpu/qwen3', 'Think of the weather.', 1500, 2, 0),"
        " (4, 1, 'user', 'and back?', 4, 'complete',"
        "  NULL, NULL, NULL, NULL, NULL, NULL, '', NULL, NULL, 0),"
        " (5, 1, 'assistant', 'half a fjord', 5, 'streaming',"
        "  NULL, NULL, NULL, NULL, NULL, 'tiny', '', NULL, NULL, 0)"
    )
    before = conn.execute("SELECT * FROM messages ORDER BY id").fetchall()
    conn.close()

    store = ChatStore(path)
    assert store.schema_version == LATEST_VERSION
    conn = sqlite3.connect(path, isolation_level=None)
    after = conn.execute(
        "SELECT *, draft_tokens IS NULL AND accepted_tokens IS NULL FROM messages ORDER BY id"
    ).fetchall()
    conn.close()
    # Every old column of every row is as it was (the streaming one recovered on open).
    recovered = [*before[4][:5], "interrupted", RECOVERED_DETAIL, *before[4][7:]]
    assert [tuple(r[: len(before[0])]) for r in after] == [
        *map(tuple, before[:4]),
        tuple(recovered),
    ]
    assert all(r[-1] == 1 for r in after)  # old replies have no draft counts
    shown = store.messages(1)
    assert [m.content for m in shown] == [
        "plan a fjord hike",
        "second try",
        "and back?",
        "half a fjord",
    ]
    old = shown[1]
    assert old.stats == ReplyStats(9, 6, 8, 42.5, 12.0) and old.stats.draft_tokens is None
    assert (old.model, old.reasoning, old.variant_count) == (
        "gpu/qwen3",
        "Think of the weather.",
        2,
    )
    assert store.search("fjord")[0].conversation_id == 1  # the index came through too

    # A new speculative reply keeps its counts, and reads them back.
    stats = ReplyStats(
        prompt_tokens=9, completion_tokens=48, tokens_per_s=61.0, draft_tokens=40,
        accepted_tokens=31,
    )  # fmt: skip
    store.finish_message(5, "a whole fjord", MessageStatus.COMPLETE, stats=stats)
    assert store.message(5).stats == stats
    assert store.messages(1)[-1].stats.accepted_tokens == 31
    exported = json.loads(store.export_json(1))["messages"][-1]["stats"]
    assert (exported["draft_tokens"], exported["accepted_tokens"]) == (40, 31)
    store.close()
    reopened = ChatStore(path)
    assert reopened.message(5).stats == stats  # and after reopening the file
    reopened.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    ChatStore(path).close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("UPDATE schema_version SET version = ?", (LATEST_VERSION + 1,))
    conn.close()
    with pytest.raises(SchemaTooNewError):
        ChatStore(path)


def test_conversations_and_messages(store: ChatStore) -> None:
    sampling = SamplingSettings(temperature=0.3, top_k=20, seed=7)
    conv = store.create_conversation(
        "First", model="tiny", system_prompt="Be brief.", sampling=sampling
    )
    assert store.conversation(conv.id).sampling == sampling
    u = store.add_message(conv.id, "user", "question one")
    a = store.add_message(conv.id, "assistant", "", MessageStatus.STREAMING)
    store.save_partial(a.id, "partial")
    assert store.message(a.id).content == "partial"
    stats = ReplyStats(prompt_tokens=10, completion_tokens=5, tokens_per_s=50.0, ttft_ms=12.5)
    store.finish_message(a.id, "answer one", MessageStatus.COMPLETE, stats=stats)
    done = store.message(a.id)
    assert done.status is MessageStatus.COMPLETE and done.stats == stats
    # save_partial never touches a finished row
    store.save_partial(a.id, "late write")
    assert store.message(a.id).content == "answer one"
    store.add_message(conv.id, "user", "question two")
    assert [m.role for m in store.messages(conv.id)] == ["user", "assistant", "user"]
    # edit-and-resend / regenerate: drop a message and everything after it
    assert store.delete_messages_from(conv.id, a.id) == 2
    assert [m.id for m in store.messages(conv.id)] == [u.id]
    store.rename(conv.id, "  Renamed \n chat ")
    assert store.conversation(conv.id).title == "Renamed chat"
    newer = store.create_conversation()
    assert [c.id for c in store.list_conversations()] == [newer.id, conv.id]
    store.set_chat_settings(
        conv.id, system_prompt="New", sampling=SamplingSettings(top_p=0.5), preset_id=None
    )
    changed = store.conversation(conv.id)
    assert changed.system_prompt == "New" and changed.sampling.top_p == 0.5
    with pytest.raises(ChatStoreError):
        store.conversation(9999)


def test_search_titles_messages_and_snippets(store: ChatStore) -> None:
    a = store.create_conversation("Rust lifetimes")
    store.add_message(a.id, "user", "How do borrow checkers work?")
    b = store.create_conversation("Dinner")
    store.add_message(b.id, "user", "A recipe for pasta carbonara please")
    store.add_message(b.id, "assistant", "Carbonara needs eggs, pecorino and guanciale.")
    c = store.create_conversation("Streaming")
    s = store.add_message(c.id, "assistant", "", MessageStatus.STREAMING)
    store.save_partial(s.id, "carbonara in progress")

    hits = store.search("carbon")  # prefix match
    assert [h.conversation_id for h in hits] == [b.id]  # one hit per chat; streaming unindexed
    assert "[" in hits[0].snippet and "]" in hits[0].snippet
    assert store.search("rust")[0].conversation_id == a.id
    assert store.search("BORROW checker")[0].conversation_id == a.id  # all words, any case
    assert store.search("borrow pasta") == []
    assert store.search('"; DROP TABLE messages; --') == []  # user text never breaks FTS
    assert store.search("   ") == []
    assert fts_query("a-b") == '"a"* "b"*'

    store.finish_message(s.id, "carbonara done", MessageStatus.COMPLETE)
    assert {h.conversation_id for h in store.search("carbonara")} == {b.id, c.id}
    store.finish_message(s.id, "changed text", MessageStatus.COMPLETE)
    assert {h.conversation_id for h in store.search("carbonara")} == {b.id}
    store.rename(a.id, "Ownership")
    assert store.search("lifetimes") == []
    assert store.search("ownership")[0].conversation_id == a.id
    conn = sqlite3.connect(store.path)
    conn.execute("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')")
    conn.execute("INSERT INTO conversations_fts(conversations_fts) VALUES ('integrity-check')")
    conn.close()


def test_presets(store: ChatStore) -> None:
    presets = store.presets()
    names = [p.name for p in presets]
    assert {"Default", "Precise", "Creative", "Coder"} <= set(names)
    assert all(p.builtin for p in presets)
    coder = next(p for p in presets if p.name == "Coder")
    assert coder.sampling.temperature == 0.2 and "code" in coder.system_prompt
    with pytest.raises(ChatStoreError):
        store.delete_preset(coder.id)
    with pytest.raises(ChatStoreError):
        store.save_preset("Coder", "x", SamplingSettings())
    mine = store.save_preset("Pirate", "Talk like a pirate.", SamplingSettings(temperature=1.2))
    again = store.save_preset("Pirate", "Arr.", SamplingSettings(max_tokens=64))
    assert again.id == mine.id and again.system_prompt == "Arr."
    assert again.sampling == SamplingSettings(max_tokens=64)
    conv = store.create_conversation(preset_id=mine.id)
    store.delete_preset(mine.id)
    assert store.preset(mine.id) is None
    assert store.conversation(conv.id).preset_id is None  # ON DELETE SET NULL


def test_sampling_settings_json_is_lenient() -> None:
    s = SamplingSettings.from_json('{"temperature": 1, "top_k": 5.5, "seed": true, "x": 1}')
    assert s == SamplingSettings(temperature=1.0)
    assert SamplingSettings.from_json("not json") == SamplingSettings()
    merged = SamplingSettings(temperature=0.1, top_p=0.9).merged(SamplingSettings(top_p=0.5))
    assert merged == SamplingSettings(temperature=0.1, top_p=0.5)


def test_export_formats(store: ChatStore) -> None:
    conv = store.create_conversation(
        "Export me", model="tiny-q8", system_prompt="Sys.", sampling=SamplingSettings(seed=3)
    )
    store.add_message(conv.id, "user", "Show code")
    a = store.add_message(conv.id, "assistant", "", MessageStatus.STREAMING)
    store.finish_message(
        a.id, "```python\nprint(1)\n```", MessageStatus.INTERRUPTED, detail="stopped"
    )
    md = store.export_markdown(conv.id)
    assert md.startswith("# Export me\n")
    assert "- Model: tiny-q8" in md and "seed=3" in md
    assert "## System prompt\n\nSys." in md
    assert "## You\n\nShow code" in md
    assert "## Assistant\n\n```python\nprint(1)\n```" in md
    assert "*(interrupted: stopped)*" in md
    data = json.loads(store.export_json(conv.id))
    assert data["format"] == "hearth.conversation" and data["version"] == 1
    assert data["title"] == "Export me" and data["system_prompt"] == "Sys."
    assert data["sampling"] == {"seed": 3}
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"]
    assert data["messages"][1]["status"] == "interrupted"
    assert data["messages"][1]["detail"] == "stopped"


def test_streaming_rows_become_interrupted_on_reopen(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    db = AsyncChatStore(path)
    conv = db.sync(lambda s: s.create_conversation("crash"))
    msg = db.sync(lambda s: s.add_message(conv.id, "assistant", "", MessageStatus.STREAMING))
    now = [0.0]
    rec = ReplyRecorder(db, msg.id, interval=0.7, clock=lambda: now[0])
    for word in ["Once ", "upon ", "a ", "time"]:
        now[0] += 0.3  # one checkpoint, after "a " (0.9 s)
        rec.append(word)
    assert rec.checkpoints == 1 and rec.text == "Once upon a time"
    db.close()  # the app dies here: no finish()
    reopened = ChatStore(path)
    assert reopened.recovered == 1
    kept = reopened.message(msg.id)
    assert kept.status is MessageStatus.INTERRUPTED
    assert kept.content == "Once upon a "  # the last checkpoint
    assert kept.detail == RECOVERED_DETAIL
    assert reopened.search("upon")[0].conversation_id == conv.id
    reopened.close()


def test_async_store_runs_off_the_calling_thread(tmp_path: Path) -> None:
    import threading

    async def scenario() -> None:
        db = AsyncChatStore(tmp_path / "a.db")
        thread = await db.run(lambda s: threading.current_thread().name)
        assert thread.startswith("hearth-chats-db")
        conv = await db.run(lambda s: s.create_conversation("t"))
        msg = await db.run(
            lambda s: s.add_message(conv.id, "assistant", "", MessageStatus.STREAMING)
        )
        rec = ReplyRecorder(db, msg.id, interval=0.0)
        rec.append("abc")
        await rec.finish(MessageStatus.COMPLETE, stats=ReplyStats(completion_tokens=3))
        got = await db.run(lambda s: s.message(msg.id))
        assert got.content == "abc" and got.stats.completion_tokens == 3
        db.close()
        with pytest.raises(RuntimeError):
            await db.run(lambda s: s.presets())

    asyncio.run(scenario())


def test_a_replys_tool_calls_are_kept_in_order_and_go_with_it(tmp_path: Path):
    from hearth.chats import ToolCallRecord, ToolOutcome

    store = ChatStore(tmp_path / "chats.db")
    conv = store.create_conversation("tools")
    store.add_message(conv.id, "user", "what time is it?")
    reply = store.add_message(conv.id, "assistant", "Checking. It is noon.")
    first = ToolCallRecord(0, 10, "c1", "time", "get_current_time", '{"timezone": "UTC"}',
                           '{"datetime": "12:00"}', ToolOutcome.OK, 0.25)  # fmt: skip
    second = ToolCallRecord(0, 10, "c2", "time", "convert_time", "{}", "The user denied this"
                            " tool call.", ToolOutcome.DENIED)  # fmt: skip
    store.tool_calls.add(reply.id, first)
    store.tool_calls.add(reply.id, second)
    reopened = ChatStore(tmp_path / "chats.db")
    messages = reopened.messages(conv.id)
    assert messages[0].tool_calls == ()
    assert messages[1].tool_calls == (first, second)
    reopened.delete_message(reply.id)
    assert reopened.tool_calls.of_message(reply.id) == ()


def test_a_chat_keeps_its_choice_of_tools(tmp_path: Path):
    store = ChatStore(tmp_path / "chats.db")
    conv = store.create_conversation("tools")
    assert conv.tool_choice == ()
    store.tool_calls.set_choice(conv.id, {("time", "get_current_time"), ("toy", "add")})
    again = ChatStore(tmp_path / "chats.db").conversation(conv.id)
    assert again.tool_choice == (("time", "get_current_time"), ("toy", "add"))
