"""A chat's attached documents and their passage index (SQLite FTS5, BM25).

A document that fits the model's context goes into the chat whole (``mode = inline``);
a bigger one is cut into passages of about ``PASSAGE_CHARS`` characters, each keeping
its page or first line, and indexed per chat, so that each turn can retrieve the few
passages its question needs and say where they came from. An inline document is kept
as passages too, without overlap: joined they are its text, and a turn that no longer
has room for it whole searches them. Embeddings, when an
embedding model is loaded beside the chat model, will rank alongside BM25.

``ChatStore`` owns the connection; it hands this index the connection and its lock.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from hearth.chats.doc_parse import ParsedDocument, Section
from hearth.chats.schema import transaction

PASSAGE_CHARS = 1200
OVERLAP_CHARS = 200
CHARS_PER_TOKEN = 4
"""A plain estimate for deciding inline or indexed before the model counts exactly."""

_STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        "a an and are as at be by for from has have how in is it its of on or that the this to"
        " was were what when where which who why will with does did do about into than then"
        " there their they them you your i me my we our",
    )
)

Mode = Literal["inline", "indexed"]


@dataclass(frozen=True)
class Attachment:
    id: int
    conversation_id: int
    name: str
    kind: str
    chars: int
    pages: int
    mode: Mode
    passages: int


@dataclass(frozen=True)
class PassageHit:
    """A retrieved passage and where it is, for the prompt and for "Sources"."""

    attachment_id: int
    name: str
    text: str
    page: int | None
    line: int | None
    score: float
    passage_id: int = 0

    @property
    def where(self) -> str:
        if self.page is not None:
            return f"{self.name}, page {self.page}"
        if self.line is not None:
            return f"{self.name}, line {self.line}"
        return self.name


def estimate_tokens(chars: int) -> int:
    return (chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def fits_inline(document: ParsedDocument, remaining_context_tokens: int) -> bool:
    """Whole when it takes at most half of what is left of the context."""
    return estimate_tokens(document.chars) <= remaining_context_tokens // 2


def passages(sections: tuple[Section, ...], overlap: int = OVERLAP_CHARS) -> Iterator[Section]:
    """Cut sections into passages of about PASSAGE_CHARS, on paragraph or line breaks
    where it can, each starting with the end of the one before (``overlap``), so that a
    fact on a boundary is whole in one of them."""
    for section in sections:
        text = section.text.strip()
        start = 0
        while start < len(text):
            end = min(len(text), start + PASSAGE_CHARS)
            if end < len(text):
                cut = max(text.rfind("\n", start + PASSAGE_CHARS // 2, end),
                          text.rfind(". ", start + PASSAGE_CHARS // 2, end))  # fmt: skip
                end = cut + 1 if cut > 0 else end
            line = None
            if section.line is not None:
                line = section.line + text.count("\n", 0, start)
            yield Section(text[start:end].strip(), page=section.page, line=line)
            if end >= len(text):
                break
            start = max(end - overlap, start + 1)


def match_query(question: str) -> str | None:
    """An FTS5 query for a question: its content words, any of them (BM25 ranks the
    passages that have more, and rarer, of them first)."""
    words = [w for w in re.findall(r"\w+", question.lower()) if w not in _STOPWORDS]
    if not words:
        return None
    return " OR ".join(f'"{w}"' for w in dict.fromkeys(words))


class AttachmentIndex:
    """The attachments and passages of every chat, on the store's connection."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn = conn
        self._lock = lock

    def add(self, conversation_id: int, document: ParsedDocument, mode: Mode) -> Attachment:
        """Keep ``document`` with the chat; an indexed one has its passages stored."""
        with self._lock, transaction(self._conn):
            cur = self._conn.execute(
                "INSERT INTO attachments(conversation_id, name, kind, chars, pages, mode,"
                " created) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (conversation_id, document.name, document.kind, document.chars,
                 document.pages, mode, time.time()),
            )  # fmt: skip
            attachment_id = int(cur.lastrowid or 0)
            # An inline document's passages don't overlap: joined, they are its text; and
            # when it no longer fits whole, they are searched like an indexed one's.
            chunks = tuple(passages(document.sections, 0 if mode == "inline" else OVERLAP_CHARS))
            self._conn.executemany(
                "INSERT INTO passages(attachment_id, ordinal, text, page, line)"
                " VALUES (?, ?, ?, ?, ?)",
                ((attachment_id, i, c.text, c.page, c.line) for i, c in enumerate(chunks)),
            )
        return self.get(attachment_id)

    def get(self, attachment_id: int) -> Attachment:
        with self._lock:
            row = self._conn.execute(_SELECT + " WHERE a.id = ? GROUP BY a.id",
                                     (attachment_id,)).fetchone()  # fmt: skip
        if row is None:
            raise KeyError(attachment_id)
        return _attachment(row)

    def of_chat(self, conversation_id: int) -> list[Attachment]:
        with self._lock:
            rows = self._conn.execute(
                _SELECT + " WHERE a.conversation_id = ? GROUP BY a.id ORDER BY a.id",
                (conversation_id,),
            ).fetchall()
        return [_attachment(r) for r in rows]

    def text(self, attachment_id: int) -> str:
        """An inline attachment's whole text (an indexed one's, passage by passage)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT text FROM passages WHERE attachment_id = ? ORDER BY ordinal",
                (attachment_id,),
            ).fetchall()
        return "\n\n".join(str(r[0]) for r in rows)

    def delete(self, attachment_id: int) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM attachments WHERE id = ?", (attachment_id,))

    def search(
        self,
        conversation_id: int,
        question: str,
        limit: int = 3,
        *,
        attachments: Collection[int] | None = None,
    ) -> list[PassageHit]:
        """The chat's passages that best answer ``question``, best first: of its indexed
        documents, or of ``attachments`` (an inline one too, when it no longer fits)."""
        query = match_query(question)
        if query is None:
            return []
        params: tuple[int, ...] = ()
        if attachments is None:
            which = "a.mode = 'indexed'"
        else:
            ids = tuple(int(i) for i in attachments)
            which, params = f"a.id IN ({','.join('?' * len(ids)) or 'NULL'})", ids
        with self._lock:
            rows = self._conn.execute(
                "SELECT p.attachment_id, a.name, p.text, p.page, p.line,"
                " bm25(passages_fts) AS score, p.id"
                " FROM passages_fts JOIN passages p ON p.id = passages_fts.rowid"
                " JOIN attachments a ON a.id = p.attachment_id"
                f" WHERE passages_fts MATCH ? AND a.conversation_id = ? AND {which}"
                " ORDER BY score LIMIT ?",
                (query, conversation_id, *params, limit),
            ).fetchall()
        return [_hit(r, -float(r[5])) for r in rows]

    # ------------------------------------------------------------ vectors
    def passage_texts(self, attachment_id: int) -> list[tuple[int, str]]:
        """(passage id, text) of a document, in order: what an embedder is given."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT id, text FROM passages WHERE attachment_id = ? ORDER BY ordinal",
                (attachment_id,),
            ).fetchall()
        return [(int(r[0]), str(r[1])) for r in rows]

    def set_vectors(self, model: str, vectors: Iterable[tuple[int, Sequence[float]]]) -> None:
        """Keep passages' vectors from embedding model ``model`` (float32, normalised)."""
        rows = [(pid, model, np.asarray(v, dtype="<f4").tobytes()) for pid, v in vectors]
        with self._lock, transaction(self._conn):
            self._conn.executemany(
                "INSERT OR REPLACE INTO passage_vectors(passage_id, model, vector)"
                " VALUES (?, ?, ?)",
                rows,
            )

    def nearest(
        self, conversation_id: int, model: str, query: Sequence[float], limit: int = 3
    ) -> list[PassageHit]:
        """The chat's passages whose ``model`` vectors are closest to ``query`` (cosine:
        the vectors are normalised), best first; none when nothing was embedded."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT p.attachment_id, a.name, p.text, p.page, p.line, v.vector, p.id"
                " FROM passage_vectors v JOIN passages p ON p.id = v.passage_id"
                " JOIN attachments a ON a.id = p.attachment_id"
                " WHERE a.conversation_id = ? AND v.model = ?",
                (conversation_id, model),
            ).fetchall()
        q = np.asarray(query, dtype=np.float32)
        if not rows or not q.size:
            return []
        matrix = np.stack([np.frombuffer(r[5], dtype="<f4") for r in rows])
        if matrix.shape[1] != q.size:
            return []  # another model's width: not comparable
        scores = matrix @ (q / (np.linalg.norm(q) or 1.0))
        best = np.argsort(-scores)[:limit]
        return [_hit(rows[i], float(scores[i])) for i in best]

    # ------------------------------------------------------------ sources of replies
    def add_sources(self, message_id: int, hits: Sequence[PassageHit]) -> None:
        """Remember the passages reply ``message_id`` was given."""
        with self._lock, transaction(self._conn):
            self._conn.executemany(
                "INSERT INTO message_sources(message_id, name, page, line, text)"
                " VALUES (?, ?, ?, ?, ?)",
                ((message_id, h.name, h.page, h.line, h.text) for h in hits),
            )

    def sources(self, conversation_id: int) -> dict[int, list[PassageHit]]:
        """Each reply's passages (by message id), in the order they were given."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT s.message_id, s.name, s.text, s.page, s.line FROM message_sources s"
                " JOIN messages m ON m.id = s.message_id WHERE m.conversation_id = ?"
                " ORDER BY s.id",
                (conversation_id,),
            ).fetchall()
        out: dict[int, list[PassageHit]] = {}
        for r in rows:
            out.setdefault(int(r[0]), []).append(PassageHit(0, str(r[1]), str(r[2]), r[3], r[4], 0))
        return out


_SELECT = (
    "SELECT a.id, a.conversation_id, a.name, a.kind, a.chars, a.pages, a.mode,"
    " COUNT(p.id) FROM attachments a LEFT JOIN passages p ON p.attachment_id = a.id"
)


def _hit(row: sqlite3.Row, score: float) -> PassageHit:
    return PassageHit(int(row[0]), str(row[1]), str(row[2]), row[3], row[4], score, int(row[6]))


def _attachment(row: sqlite3.Row) -> Attachment:
    mode: Mode = "inline" if row[6] == "inline" else "indexed"
    return Attachment(int(row[0]), int(row[1]), str(row[2]), str(row[3]), int(row[4]),
                      int(row[5]), mode, int(row[7]))  # fmt: skip
