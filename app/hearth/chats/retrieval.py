"""A chat turn's documents: which go in whole, which passages are found, and the prompt
text that carries them with their sources.

Each turn, a document kept inline goes into the system message whole while the inline
ones together take at most half of what is left of the context; one that no longer fits
is searched like the indexed ones. Passages are ranked by BM25 and, when an embedding
model is available, by the cosine of their vectors too; the two rankings are fused by
reciprocal rank fusion (Cormack et al., 2009), which needs no score calibration between
them. Found passages go into the turn's own user message, each under its source.

Qt-free: the GUI gives an ``AsyncChatStore`` (every call on the store's thread) and, when
it has one, an ``Embedder`` that asks the worker.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Protocol

from hearth.chats.async_store import AsyncChatStore
from hearth.chats.attachments import PassageHit, estimate_tokens
from hearth.chats.store import ChatStore

log = logging.getLogger(__name__)

RRF_K = 60
"""Reciprocal rank fusion's constant: a passage's score is the sum of 1 / (k + rank)."""
DEPTH = 20
"""Candidates taken from each ranking before they are fused."""
PASSAGES_PER_TURN = 3
EMBED_BATCH = 16
"""Passages per embeddings request: each answer is parsed on the GUI's thread, so small."""


class EmbeddingError(Exception):
    """The embedder could not embed (no model, the worker went away): BM25 alone then."""


class Embedder(Protocol):
    """Turns texts into normalised vectors with one embedding model."""

    @property
    def model(self) -> str: ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


@dataclass(frozen=True)
class TurnDocuments:
    """What a turn carries of the chat's documents."""

    whole: tuple[tuple[str, str], ...] = ()  # (name, text) of documents sent whole
    passages: tuple[PassageHit, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.whole or self.passages)


def fuse(*rankings: Sequence[PassageHit], k: int = RRF_K) -> list[PassageHit]:
    """Reciprocal rank fusion of rankings of the same passages, best first (the score is
    the fused one; ties keep the order in which passages were first seen)."""
    scores: dict[int, float] = {}
    first: dict[int, PassageHit] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, start=1):
            scores[hit.passage_id] = scores.get(hit.passage_id, 0.0) + 1.0 / (k + rank)
            first.setdefault(hit.passage_id, hit)
    order = sorted(scores, key=lambda pid: -scores[pid])
    return [replace(first[pid], score=scores[pid]) for pid in order]


async def search(
    db: AsyncChatStore,
    conversation_id: int,
    question: str,
    *,
    attachments: Collection[int] | None = None,
    embedder: Embedder | None = None,
    limit: int = PASSAGES_PER_TURN,
) -> list[PassageHit]:
    """The best passages for ``question``: BM25, fused with the embedder's ranking when
    there is one and the chat's passages were embedded by its model."""
    keep = set(attachments) if attachments is not None else None
    bm25 = await db.run(
        lambda s: s.attachments.search(conversation_id, question, DEPTH, attachments=keep)
    )
    if embedder is None:
        return bm25[:limit]
    try:
        vectors = await embedder.embed([question])
    except EmbeddingError as exc:
        log.info("retrieval by BM25 alone: %s", exc)
        return bm25[:limit]
    model, query = embedder.model, vectors[0]
    near = await db.run(lambda s: s.attachments.nearest(conversation_id, model, query, DEPTH))
    near = [h for h in near if keep is None or h.attachment_id in keep]
    return fuse(bm25, near)[:limit] if near else bm25[:limit]


async def embed_attachment(
    db: AsyncChatStore,
    attachment_id: int,
    embedder: Embedder,
    progress: Callable[[int, int], None],
    cancelled: Callable[[], bool],
) -> int:
    """Embed a document's passages in small batches and keep their vectors; returns how
    many were embedded (fewer when ``cancelled()`` turned true between batches)."""
    texts = await db.run(lambda s: s.attachments.passage_texts(attachment_id))
    done = 0
    for start in range(0, len(texts), EMBED_BATCH):
        if cancelled():
            break
        batch = texts[start : start + EMBED_BATCH]
        vectors = await embedder.embed([text for _, text in batch])
        pairs = list(zip((pid for pid, _ in batch), vectors, strict=True))
        await db.run(partial(_keep_vectors, model=embedder.model, pairs=pairs))
        done += len(batch)
        progress(done, len(texts))
    return done


def _keep_vectors(store: ChatStore, *, model: str, pairs: list[tuple[int, list[float]]]) -> None:
    store.attachments.set_vectors(model, pairs)


async def turn_documents(
    db: AsyncChatStore,
    conversation_id: int,
    question: str,
    remaining_tokens: int,
    embedder: Embedder | None = None,
) -> TurnDocuments:
    """The chat's documents for this turn: the inline ones whole while they fit in half
    of ``remaining_tokens``; passages from the others, in what is left of that half."""
    docs = await db.run(lambda s: s.attachments.of_chat(conversation_id))
    budget = remaining_tokens // 2
    whole, searched = [], []
    for doc in docs:
        cost = estimate_tokens(doc.chars)
        if doc.mode == "inline" and cost <= budget:
            budget -= cost
            whole.append(doc)
        else:
            searched.append(doc.id)
    texts = await db.run(lambda s: tuple((d.name, s.attachments.text(d.id)) for d in whole))
    hits: list[PassageHit] = []
    if searched:
        found = await search(db, conversation_id, question, attachments=searched, embedder=embedder)
        for hit in found:  # the best first, while they fit in what is left of the half
            budget -= estimate_tokens(len(hit.text) + len(hit.where))
            if budget < 0:
                break
            hits.append(hit)
    return TurnDocuments(texts, tuple(hits))


def prompt_tokens(messages: Sequence[dict[str, Any]]) -> int:
    """An estimate of the tokens ``messages`` take (before the model counts exactly)."""
    return sum(estimate_tokens(len(str(m.get("content") or ""))) + 4 for m in messages)


def documents_text(whole: Sequence[tuple[str, str]]) -> str:
    parts = [f'<document name="{name}">\n{text}\n</document>' for name, text in whole]
    return "The user attached these documents to the chat:\n\n" + "\n\n".join(parts)


def passages_text(question: str, hits: Sequence[PassageHit]) -> str:
    parts = [f"[{i}] {hit.where}\n{hit.text}" for i, hit in enumerate(hits, start=1)]
    return (
        "Passages from the documents attached to this chat:\n\n"
        + "\n\n".join(parts)
        + "\n\nAnswer from these passages where they apply, and name the source you used.\n\n"
        + f"Question: {question}"
    )


def with_documents(
    messages: Sequence[dict[str, Any]], documents: TurnDocuments
) -> list[dict[str, Any]]:
    """``messages`` carrying ``documents``: whole documents after the system prompt (the
    same text each turn, so the worker's prefix cache keeps it), passages in the last
    user message (this turn's question only)."""
    out = [dict(m) for m in messages]
    if documents.whole:
        text = documents_text(documents.whole)
        if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
            out[0]["content"] = f"{out[0]['content']}\n\n{text}"
        else:
            out.insert(0, {"role": "system", "content": text})
    last = next((m for m in reversed(out) if m.get("role") == "user"), None)
    if documents.passages and last is not None and isinstance(last.get("content"), str):
        last["content"] = passages_text(last["content"], documents.passages)
    return out
