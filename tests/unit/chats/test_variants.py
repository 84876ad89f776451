"""Reply variants, reasoning and the model's name kept with each reply (schema v3)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hearth.chats import ChatStore, MessageStatus
from hearth.chats.schema import LATEST_VERSION, migrate


def _conversation(store: ChatStore) -> tuple[int, int, int]:
    conv = store.create_conversation("Variants")
    user = store.add_message(conv.id, "user", "Name a colour")
    first = store.add_message(conv.id, "assistant", "Red", model="tiny-a")
    return conv.id, user.id, first.id


def test_regenerations_are_kept_and_one_is_shown(tmp_path: Path) -> None:
    store = ChatStore(tmp_path / "chats.db")
    conv, user, first = _conversation(store)
    second = store.add_message(conv, "assistant", "Blue", model="tiny-b", variant_of=first)
    third = store.add_message(conv, "assistant", "Green", variant_of=second.id)

    shown = store.messages(conv)
    assert [m.content for m in shown] == ["Name a colour", "Green"]
    assert (shown[1].variant_index, shown[1].variant_count) == (2, 3)
    assert shown[0].variant_count == 1  # a user message has no variants
    assert [m.content for m in store.variants(second.id)] == ["Red", "Blue", "Green"]
    assert store.message(second.id).model == "tiny-b"

    store.show_variant(first)
    again = store.messages(conv)
    assert [m.content for m in again] == ["Name a colour", "Red"]
    assert (again[1].variant_index, again[1].variant_count, again[1].model) == (0, 3, "tiny-a")
    assert third.group == first == again[1].group
    # A conversation exported or sent to the model has the shown variant only.
    assert "Green" not in store.export_markdown(conv)

    assert store.delete_message(third.id) == 3  # a reply goes with all its variants
    assert [m.id for m in store.messages(conv)] == [user]
    store.close()


def test_reasoning_is_stored_with_the_reply(tmp_path: Path) -> None:
    store = ChatStore(tmp_path / "chats.db")
    conv, _user, first = _conversation(store)
    store.finish_message(
        first, "Red", MessageStatus.COMPLETE, reasoning="Warm colours first.", reasoning_ms=2300
    )
    reply = store.messages(conv)[1]
    assert (reply.reasoning, reply.reasoning_ms) == ("Warm colours first.", 2300)
    store.close()


def test_v2_database_upgrades_and_keeps_its_messages(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, target=2)
    conn.execute("INSERT INTO conversations(title, created, updated) VALUES ('Old', 1, 1)")
    conn.execute(
        "INSERT INTO messages(conversation_id, role, content, created)"
        " VALUES (1, 'user', 'hello there', 1), (1, 'assistant', 'hi', 2)"
    )
    conn.close()

    store = ChatStore(path)
    assert store.schema_version == LATEST_VERSION
    old = store.messages(1)
    assert [(m.content, m.model, m.reasoning, m.variant_count) for m in old] == [
        ("hello there", None, "", 1),
        ("hi", None, "", 1),
    ]
    assert store.search("hello")[0].conversation_id == 1  # the index survived
    store.add_message(1, "assistant", "hey", variant_of=old[1].id)
    assert [m.content for m in store.messages(1)] == ["hello there", "hey"]
    store.close()
