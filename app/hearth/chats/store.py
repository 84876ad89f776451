"""ChatStore: conversations, messages, presets and search in one SQLite file.

Synchronous and thread-safe (one connection behind a lock). The GUI never calls it on
the Qt thread: it goes through ``AsyncChatStore``, which runs each call on a single
dedicated thread. Every method is one short transaction.

The store owns the connection and its lock; the pieces with SQL of their own get both
and stay out of this file: reply variants (``variants.py``), full-text search
(``search.py``), attachments, images and tool calls (their indexes, as attributes).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from hearth.chats import export
from hearth.chats import rows as dbrows
from hearth.chats import search as fulltext
from hearth.chats import variants as groups
from hearth.chats.attachments import AttachmentIndex
from hearth.chats.images import ImageIndex
from hearth.chats.models import (
    Conversation,
    Message,
    MessageStatus,
    Preset,
    ReplyStats,
    SamplingSettings,
    SearchHit,
)
from hearth.chats.schema import migrate, transaction
from hearth.chats.tool_calls import ToolCallLog
from hearth.config.paths import chat_images_dir

log = logging.getLogger(__name__)

DEFAULT_TITLE = "New chat"
RECOVERED_DETAIL = "Hearth closed before the reply finished."


class ChatStoreError(Exception):
    """A request the store refuses (unknown id, built-in preset, ...)."""


class ChatStore:
    def __init__(self, path: Path | str, *, images_dir: Path | None = None) -> None:
        """``images_dir``: where attached images are kept (default: ``images/`` beside
        the database; an in-memory store keeps none)."""
        self.path = Path(path)
        on_disk = str(path) != ":memory:"
        if on_disk:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")  # WAL: durable at checkpoints
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.execute("PRAGMA busy_timeout=5000")
        self.schema_version = migrate(self._conn)
        self.attachments = AttachmentIndex(self._conn, self._lock)  # documents in chats
        folder = images_dir or (chat_images_dir(self.path) if on_disk else None)
        self.images = ImageIndex(self._conn, self._lock, folder)  # images in messages
        self.tool_calls = ToolCallLog(self._conn, self._lock)  # each reply's tool calls
        self.recovered = self.recover_interrupted()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _one(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Row | None:
        with self._lock:
            row: sqlite3.Row | None = self._conn.execute(sql, params).fetchone()
            return row

    def _all(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return list(self._conn.execute(sql, params).fetchall())

    def _write(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        with self._lock, transaction(self._conn):
            return self._conn.execute(sql, params)

    # ------------------------------------------------------------ conversations
    def create_conversation(
        self,
        title: str = DEFAULT_TITLE,
        *,
        model: str | None = None,
        system_prompt: str = "",
        sampling: SamplingSettings | None = None,
        preset_id: int | None = None,
    ) -> Conversation:
        now = time.time()
        cur = self._write(
            "INSERT INTO conversations(title, created, updated, model, system_prompt,"
            " sampling, preset_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                title,
                now,
                now,
                model,
                system_prompt,
                (sampling or SamplingSettings()).to_json(),
                preset_id,
            ),
        )
        return self.conversation(int(cur.lastrowid or 0))

    def get_conversation(self, conversation_id: int) -> Conversation | None:
        row = self._one(
            f"SELECT {dbrows.CONV_COLS} FROM conversations WHERE id = ?", (conversation_id,)
        )
        return dbrows.conversation(row) if row else None

    def conversation(self, conversation_id: int) -> Conversation:
        found = self.get_conversation(conversation_id)
        if found is None:
            raise ChatStoreError(f"no conversation {conversation_id}")
        return found

    def list_conversations(self, limit: int = 1000) -> list[Conversation]:
        rows = self._all(
            f"SELECT {dbrows.CONV_COLS} FROM conversations ORDER BY updated DESC, id DESC LIMIT ?",
            (limit,),
        )
        return [dbrows.conversation(r) for r in rows]

    def rename(self, conversation_id: int, title: str) -> None:
        title = " ".join(title.split()) or DEFAULT_TITLE
        self._write(
            "UPDATE conversations SET title = ?, updated = ? WHERE id = ?",
            (title, time.time(), conversation_id),
        )

    def set_chat_settings(
        self,
        conversation_id: int,
        *,
        system_prompt: str,
        sampling: SamplingSettings,
        preset_id: int | None,
    ) -> None:
        self._write(
            "UPDATE conversations SET system_prompt = ?, sampling = ?, preset_id = ? WHERE id = ?",
            (system_prompt, sampling.to_json(), preset_id, conversation_id),
        )

    def set_model(self, conversation_id: int, model: str | None) -> None:
        self._write("UPDATE conversations SET model = ? WHERE id = ?", (model, conversation_id))

    def delete_conversation(self, conversation_id: int) -> None:
        """Delete the chat, and the image files no other chat shows."""
        shown = self.images.of_conversation(conversation_id)
        self._write("DELETE FROM conversations WHERE id = ?", (conversation_id,))
        self.images.prune(shown)

    # ------------------------------------------------------------ messages
    def add_message(
        self,
        conversation_id: int,
        role: str,
        content: str,
        status: MessageStatus = MessageStatus.COMPLETE,
        *,
        model: str | None = None,
        variant_of: int | None = None,
    ) -> Message:
        """Append a message; with ``variant_of`` (any reply of a group) it is a new
        variant of that reply, shown in its place while the others are kept hidden."""
        now = time.time()
        with self._lock, transaction(self._conn):
            root = None
            if variant_of is not None:
                root = groups.group_root(self._conn, variant_of)
                if root is None:
                    raise ChatStoreError(f"no message {variant_of}")
            cur = self._conn.execute(
                "INSERT INTO messages(conversation_id, role, content, created, status, model,"
                " variant_of) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (conversation_id, role, content, now, status.value, model, root),
            )
            if root is not None:
                groups.show_only(self._conn, root, int(cur.lastrowid or 0))
            self._conn.execute(
                "UPDATE conversations SET updated = ? WHERE id = ?", (now, conversation_id)
            )
        return self.message(int(cur.lastrowid or 0))

    def message(self, message_id: int) -> Message:
        row = self._one(f"SELECT {dbrows.MSG_COLS} FROM messages WHERE id = ?", (message_id,))
        if row is None:
            raise ChatStoreError(f"no message {message_id}")
        return dbrows.message(row)

    def messages(self, conversation_id: int) -> list[Message]:
        """The conversation as shown: one variant of each reply, with its place."""
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {dbrows.MSG_COLS} FROM messages WHERE conversation_id = ? AND hidden = 0"
                " ORDER BY id",
                (conversation_id,),
            ).fetchall()
            places = groups.positions(self._conn, conversation_id)
            calls = self.tool_calls.of_conversation(conversation_id)
        out = []
        for row in rows:
            message = dbrows.message(row)
            if message.id in places:
                index, count = places[message.id]
                message = replace(message, variant_index=index, variant_count=count)
            if message.id in calls:
                message = replace(message, tool_calls=calls[message.id])
            out.append(message)
        return out

    def variants(self, message_id: int) -> list[Message]:
        """Every variant of ``message_id``'s reply, oldest first (hidden ones too)."""
        with self._lock:
            root = groups.group_root(self._conn, message_id)
            ids = groups.group_ids(self._conn, root) if root is not None else []
        return [self.message(i) for i in ids]

    def show_variant(self, message_id: int) -> Message:
        """Show ``message_id`` in place of the other variants of its reply."""
        with self._lock, transaction(self._conn):
            root = groups.group_root(self._conn, message_id)
            if root is None:
                raise ChatStoreError(f"no message {message_id}")
            groups.show_only(self._conn, root, message_id)
        return self.message(message_id)

    def delete_message(self, message_id: int) -> int:
        """Delete one message; for a reply, every variant of it. Returns rows deleted."""
        shown = {i.sha256 for found in self.images.of_messages([message_id]).values()
                 for i in found}  # fmt: skip
        with self._lock, transaction(self._conn):
            root = groups.group_root(self._conn, message_id)
            if root is None:
                return 0
            count = len(groups.group_ids(self._conn, root))
            # The other variants follow by ON DELETE CASCADE (and leave the index).
            self._conn.execute("DELETE FROM messages WHERE id = ?", (root,))
        self.images.prune(shown)
        return count

    def save_partial(self, message_id: int, content: str) -> None:
        """Checkpoint a streaming reply (the text so far); cheap, no re-indexing."""
        self._write(
            "UPDATE messages SET content = ? WHERE id = ? AND status = 'streaming'",
            (content, message_id),
        )

    def finish_message(
        self,
        message_id: int,
        content: str,
        status: MessageStatus,
        *,
        detail: str | None = None,
        stats: ReplyStats | None = None,
        reasoning: str = "",
        reasoning_ms: float | None = None,
    ) -> None:
        s = stats or ReplyStats()
        self._write(
            "UPDATE messages SET content = ?, status = ?, detail = ?, prompt_tokens = ?,"
            " completion_tokens = ?, cached_tokens = ?, tokens_per_s = ?, ttft_ms = ?,"
            " draft_tokens = ?, accepted_tokens = ?, reasoning = ?, reasoning_ms = ?"
            " WHERE id = ?",
            (
                content,
                status.value,
                detail,
                s.prompt_tokens,
                s.completion_tokens,
                s.cached_tokens,
                s.tokens_per_s,
                s.ttft_ms,
                s.draft_tokens,
                s.accepted_tokens,
                reasoning,
                reasoning_ms,
                message_id,
            ),
        )

    def delete_messages_from(self, conversation_id: int, message_id: int) -> int:
        """Delete ``message_id`` and every later message of the conversation."""
        shown = self.images.of_messages_from(conversation_id, message_id)
        cur = self._write(
            "DELETE FROM messages WHERE conversation_id = ? AND id >= ?",
            (conversation_id, message_id),
        )
        self.images.prune(shown)
        return cur.rowcount

    def recover_interrupted(self) -> int:
        """Mark replies left 'streaming' by a crash as 'interrupted' (text kept)."""
        cur = self._write(
            "UPDATE messages SET status = 'interrupted', detail = COALESCE(detail, ?)"
            " WHERE status = 'streaming'",
            (RECOVERED_DETAIL,),
        )
        if cur.rowcount:
            log.warning("recovered %d interrupted replies in %s", cur.rowcount, self.path)
        return cur.rowcount

    # ------------------------------------------------------------ search
    def search(self, query: str, limit: int = 50) -> list[SearchHit]:
        """Conversations whose title or messages match every word (prefixes) of
        ``query``: title matches first, one hit per conversation (``search.py``)."""
        with self._lock:
            return fulltext.search(self._conn, query, limit)

    # ------------------------------------------------------------ presets
    def presets(self) -> list[Preset]:
        rows = self._all("SELECT * FROM presets ORDER BY builtin DESC, name")
        return [
            Preset(
                r["id"],
                r["name"],
                r["system_prompt"],
                SamplingSettings.from_json(r["sampling"]),
                bool(r["builtin"]),
            )
            for r in rows
        ]

    def preset(self, preset_id: int) -> Preset | None:
        return next((p for p in self.presets() if p.id == preset_id), None)

    def save_preset(self, name: str, system_prompt: str, sampling: SamplingSettings) -> Preset:
        """Create a preset, or update the user preset of that name."""
        name = name.strip()
        if not name:
            raise ChatStoreError("a preset needs a name")
        existing = self._one("SELECT id, builtin FROM presets WHERE name = ?", (name,))
        if existing is not None and existing["builtin"]:
            raise ChatStoreError(f"{name!r} is a built-in preset; save it under another name")
        self._write(
            "INSERT INTO presets(name, system_prompt, sampling, builtin, created)"
            " VALUES (?, ?, ?, 0, ?) ON CONFLICT(name) DO UPDATE SET"
            " system_prompt = excluded.system_prompt, sampling = excluded.sampling",
            (name, system_prompt, sampling.to_json(), time.time()),
        )
        found = next(p for p in self.presets() if p.name == name)
        return found

    def delete_preset(self, preset_id: int) -> None:
        row = self._one("SELECT builtin FROM presets WHERE id = ?", (preset_id,))
        if row is None:
            return
        if row["builtin"]:
            raise ChatStoreError("built-in presets cannot be deleted")
        self._write("DELETE FROM presets WHERE id = ?", (preset_id,))

    # ------------------------------------------------------------ export
    def export_markdown(self, conversation_id: int, images_folder: str = "") -> str:
        """The chat as Markdown; its images are linked as ``images_folder/<file>``
        (copy them there with :meth:`export_image_files`)."""
        messages = self.messages(conversation_id)
        shown = self.images.of_messages(m.id for m in messages)
        return export.conversation_markdown(
            self.conversation(conversation_id),
            messages,
            shown,
            images_folder,
            self.attachments.sources(conversation_id),
        )

    def export_image_files(self, conversation_id: int, folder: Path) -> list[Path]:
        """Copy the chat's shown images into ``folder`` (for a Markdown export)."""
        shown = self.images.of_messages(m.id for m in self.messages(conversation_id))
        return export.copy_images(self.images, shown, folder)

    def export_json(self, conversation_id: int) -> str:
        """The chat as JSON; each image is in it, as a data URL (one file that keeps all)."""
        messages = self.messages(conversation_id)
        shown = self.images.of_messages(m.id for m in messages)
        loaded = {mid: self.images.load(found) for mid, found in shown.items()}
        return export.conversation_json(
            self.conversation(conversation_id),
            messages,
            loaded,
            self.attachments.sources(conversation_id),
        )
