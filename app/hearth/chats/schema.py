"""The chats.db schema, as numbered migrations applied in order.

``schema_version`` holds one row: the number of migrations applied. A database made
by a newer Hearth (higher version) is refused rather than damaged.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hearth.chats.presets import BUILTIN_PRESETS

log = logging.getLogger(__name__)


class SchemaTooNewError(RuntimeError):
    """The database was written by a newer version of Hearth."""


_V1 = """
CREATE TABLE presets (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    system_prompt TEXT NOT NULL DEFAULT '',
    sampling TEXT NOT NULL DEFAULT '{}',
    builtin INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL
);
CREATE TABLE conversations (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    model TEXT,
    system_prompt TEXT NOT NULL DEFAULT '',
    sampling TEXT NOT NULL DEFAULT '{}',
    preset_id INTEGER REFERENCES presets(id) ON DELETE SET NULL
);
CREATE INDEX conversations_by_updated ON conversations(updated DESC);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
    content TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    status TEXT NOT NULL DEFAULT 'complete'
        CHECK (status IN ('complete', 'streaming', 'interrupted', 'error')),
    detail TEXT,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    cached_tokens INTEGER,
    tokens_per_s REAL,
    ttft_ms REAL
);
CREATE INDEX messages_by_conversation ON messages(conversation_id, id);
"""

# Full-text search. Rows still streaming are not indexed: their content is rewritten
# every half second, and indexing it each time would be wasted work. The triggers index
# a message when it leaves 'streaming' and keep the index exact on edits and deletes.
_V2 = """
CREATE VIRTUAL TABLE messages_fts USING fts5(
    content, content='messages', content_rowid='id', tokenize='unicode61'
);
CREATE VIRTUAL TABLE conversations_fts USING fts5(
    title, content='conversations', content_rowid='id', tokenize='unicode61'
);
CREATE TRIGGER messages_ai AFTER INSERT ON messages WHEN new.status != 'streaming' BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER messages_ad AFTER DELETE ON messages WHEN old.status != 'streaming' BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER messages_au_old AFTER UPDATE OF content, status ON messages
    WHEN old.status != 'streaming' BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER messages_au_new AFTER UPDATE OF content, status ON messages
    WHEN new.status != 'streaming' BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER conversations_ai AFTER INSERT ON conversations BEGIN
    INSERT INTO conversations_fts(rowid, title) VALUES (new.id, new.title);
END;
CREATE TRIGGER conversations_ad AFTER DELETE ON conversations BEGIN
    INSERT INTO conversations_fts(conversations_fts, rowid, title)
        VALUES ('delete', old.id, old.title);
END;
CREATE TRIGGER conversations_au AFTER UPDATE OF title ON conversations BEGIN
    INSERT INTO conversations_fts(conversations_fts, rowid, title)
        VALUES ('delete', old.id, old.title);
    INSERT INTO conversations_fts(rowid, title) VALUES (new.id, new.title);
END;
INSERT INTO messages_fts(rowid, content)
    SELECT id, content FROM messages WHERE status != 'streaming';
INSERT INTO conversations_fts(rowid, title) SELECT id, title FROM conversations;
"""


# Reply variants, reasoning and the model's name on each reply. A regenerated reply is
# a new row in the group of the first one (``variant_of``, NULL for that first row);
# the one shown is the group's only row with ``hidden = 0``. Existing rows keep their
# meaning: each is its own group, shown.
_V3 = """
ALTER TABLE messages ADD COLUMN model TEXT;
ALTER TABLE messages ADD COLUMN reasoning TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN reasoning_ms REAL;
ALTER TABLE messages ADD COLUMN variant_of INTEGER REFERENCES messages(id) ON DELETE CASCADE;
ALTER TABLE messages ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0;
CREATE INDEX messages_by_variant ON messages(variant_of);
"""

# Speculative decoding's counts on each reply (issue 16), so a reopened chat's footer
# shows the acceptance rate again. NULL for older replies and plain (unspeculated) ones.
_V4 = """
ALTER TABLE messages ADD COLUMN draft_tokens INTEGER;
ALTER TABLE messages ADD COLUMN accepted_tokens INTEGER;
"""


# Documents attached to a chat (issue 24): an inline one is kept whole as its sections;
# an indexed one as passages with their page or line, searched with FTS5's BM25.
_V5 = """
CREATE TABLE attachments (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    chars INTEGER NOT NULL,
    pages INTEGER NOT NULL DEFAULT 0,
    mode TEXT NOT NULL CHECK (mode IN ('inline', 'indexed')),
    created REAL NOT NULL
);
CREATE INDEX attachments_by_chat ON attachments(conversation_id);
CREATE TABLE passages (
    id INTEGER PRIMARY KEY,
    attachment_id INTEGER NOT NULL REFERENCES attachments(id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    text TEXT NOT NULL,
    page INTEGER,
    line INTEGER
);
CREATE INDEX passages_by_attachment ON passages(attachment_id, ordinal);
CREATE VIRTUAL TABLE passages_fts USING fts5(
    text, content='passages', content_rowid='id', tokenize='porter unicode61'
);
CREATE TRIGGER passages_ai AFTER INSERT ON passages BEGIN
    INSERT INTO passages_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER passages_ad AFTER DELETE ON passages BEGIN
    INSERT INTO passages_fts(passages_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
"""

# Issue 24, continued: passage vectors from an embedding model (ranked beside BM25 and
# fused), and the passages each reply was given, so a reopened chat still shows them.
_V6 = """
CREATE TABLE passage_vectors (
    passage_id INTEGER PRIMARY KEY REFERENCES passages(id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE TABLE message_sources (
    id INTEGER PRIMARY KEY,
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    page INTEGER,
    line INTEGER,
    text TEXT NOT NULL
);
CREATE INDEX message_sources_by_message ON message_sources(message_id, id);
"""


# Images in user messages (issue 23): the files are in the data folder's images/, named
# by the sha256 of their bytes (chats/images.py); a row per image a message shows.
_V7 = """
CREATE TABLE message_images (
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    mime TEXT NOT NULL,
    width INTEGER NOT NULL,
    height INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    PRIMARY KEY (message_id, ordinal)
);
CREATE INDEX message_images_by_sha ON message_images(sha256);
"""


# Tool calls of a reply (issue 24): each call the model made during the turn, where in
# the reply's text it came (``offset``), its arguments as the model wrote them, what came
# back (the text the model was given) and how long it took. Deleting the reply deletes
# its calls. Each chat keeps the tools it offers its model (``tool_choice``: a JSON
# list of [server, tool] pairs).
_V8 = """
CREATE TABLE tool_calls (
    id INTEGER PRIMARY KEY,
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    step INTEGER NOT NULL,
    offset INTEGER NOT NULL,
    call_id TEXT NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    result TEXT NOT NULL DEFAULT '',
    outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'error', 'denied', 'stopped')),
    seconds REAL
);
CREATE INDEX tool_calls_by_message ON tool_calls(message_id, id);
ALTER TABLE conversations ADD COLUMN tool_choice TEXT NOT NULL DEFAULT '[]';
"""

# How each call was approved (once, always, a standing permission, or denied; NULL for
# calls never asked about, and for those kept before this column).
_V9 = """
ALTER TABLE tool_calls ADD COLUMN approval TEXT
    CHECK (approval IN ('once', 'always', 'standing', 'denied'));
"""


def _seed_presets(conn: sqlite3.Connection) -> None:
    now = time.time()
    for name, (prompt, sampling) in BUILTIN_PRESETS.items():
        conn.execute(
            "INSERT OR IGNORE INTO presets(name, system_prompt, sampling, builtin, created)"
            " VALUES (?, ?, ?, 1, ?)",
            (name, prompt, sampling.to_json(), now),
        )


def _script(sql: str) -> Callable[[sqlite3.Connection], None]:
    def apply(conn: sqlite3.Connection) -> None:
        # executescript() would COMMIT first; run statement by statement instead so the
        # migration and its version bump share one transaction.
        for statement in _statements(sql):
            conn.execute(statement)

    return apply


def _statements(sql: str) -> list[str]:
    out: list[str] = []
    current = ""
    for line in sql.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            out.append(current.strip())
            current = ""
    if current.strip():
        out.append(current.strip())
    return out


def _v1(conn: sqlite3.Connection) -> None:
    _script(_V1)(conn)
    _seed_presets(conn)


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _v1,
    _script(_V2),
    _script(_V3),
    _script(_V4),
    _script(_V5),
    _script(_V6),
    _script(_V7),
    _script(_V8),
    _script(_V9),
]
LATEST_VERSION = len(MIGRATIONS)


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """An explicit transaction on an autocommit (``isolation_level=None``) connection."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def current_version(conn: sqlite3.Connection) -> int:
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    row = conn.execute("SELECT version FROM schema_version").fetchone()
    return int(row[0]) if row else 0


def migrate(conn: sqlite3.Connection, target: int = LATEST_VERSION) -> int:
    """Apply the missing migrations up to ``target``, each in its own transaction."""
    version = current_version(conn)
    if version > LATEST_VERSION:
        raise SchemaTooNewError(
            f"chats.db has schema version {version}; this Hearth knows up to {LATEST_VERSION}"
        )
    while version < target:
        step = MIGRATIONS[version]
        with transaction(conn):  # one transaction: the schema change and the version bump
            step(conn)
            conn.execute("DELETE FROM schema_version")
            conn.execute("INSERT INTO schema_version(version) VALUES (?)", (version + 1,))
        version += 1
        log.info("chats.db migrated to schema version %d", version)
    return version
