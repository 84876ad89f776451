"""A turn's documents: whole while they fit, passages otherwise, rankings fused, and the
prompt that carries them with their sources (issue 24)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from hearth.chats import AsyncChatStore
from hearth.chats.attachments import PassageHit
from hearth.chats.doc_parse import ParsedDocument, Section
from hearth.chats.retrieval import (
    EmbeddingError,
    TurnDocuments,
    embed_attachment,
    fuse,
    search,
    turn_documents,
    with_documents,
)


def hit(pid: int, text: str = "") -> PassageHit:
    return PassageHit(1, "doc.txt", text or f"passage {pid}", None, pid, 0.0, pid)


def test_reciprocal_rank_fusion_rewards_agreement():
    bm25 = [hit(1), hit(2), hit(3)]
    vectors = [hit(3), hit(4), hit(2)]
    fused = fuse(bm25, vectors)
    # 3 is 3rd and 1st, 2 is 2nd and 3rd: both beat 1 (1st once) and 4 (2nd once).
    assert [h.passage_id for h in fused] == [3, 2, 1, 4]
    assert fused[0].score == pytest.approx(1 / 63 + 1 / 61)
    assert [h.passage_id for h in fuse(bm25)] == [1, 2, 3]  # one ranking: unchanged


def test_whole_documents_go_after_the_system_prompt_and_passages_with_the_question():
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "an answer"},
        {"role": "user", "content": "Which number opens the vault?"},
    ]
    found = PassageHit(1, "handbook.pdf", "The vault opens with 7391.", 18, None, 1.0, 5)
    out = with_documents(messages, TurnDocuments((("notes.md", "Buy milk."),), (found,)))
    assert out[0]["content"].startswith("Be brief.\n\n")
    assert '<document name="notes.md">\nBuy milk.\n</document>' in out[0]["content"]
    assert out[1] == messages[1] and out[2] == messages[2]  # earlier turns as they were
    assert "[1] handbook.pdf, page 18\nThe vault opens with 7391." in out[3]["content"]
    assert out[3]["content"].endswith("Question: Which number opens the vault?")
    assert messages[3]["content"] == "Which number opens the vault?"  # not changed in place
    bare = with_documents(messages[1:2], TurnDocuments((("a.txt", "text"),)))
    assert bare[0]["role"] == "system" and bare[1] == messages[1]
    assert with_documents(messages, TurnDocuments()) == messages


class CountingEmbedder:
    """A real-shaped embedder for the store side: a vector per word family, so texts
    that share words are close. (The worker's own embeddings are tested against a real
    ``hearth serve`` in tests/integration/test_document_embeddings.py.)"""

    model = "bag-of-words"
    WORDS = ("vault", "harbour", "jam", "glacier")

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls: list[int] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.fail:
            raise EmbeddingError("no embedding model")
        self.calls.append(len(texts))
        out = []
        for text in texts:
            v = [float(text.lower().count(w)) for w in self.WORDS] + [0.1]
            norm = sum(x * x for x in v) ** 0.5
            out.append([x / norm for x in v])
        return out


def test_a_turn_takes_inline_documents_whole_until_half_the_context_is_used(tmp_path: Path):
    db = AsyncChatStore(tmp_path / "chats.db")

    async def scenario() -> None:
        chat = await db.run(lambda s: s.create_conversation())
        small = ParsedDocument("small.md", "text", (Section("The vault code is 7391.", line=1),))
        big = ParsedDocument("big.md", "text", (Section("harbour " * 500 + "vault 8800", line=1),))
        await db.run(lambda s: s.attachments.add(chat.id, small, "inline"))
        await db.run(lambda s: s.attachments.add(chat.id, big, "inline"))
        roomy = await turn_documents(db, chat.id, "vault code?", remaining_tokens=10_000)
        assert [name for name, _ in roomy.whole] == ["small.md", "big.md"] and not roomy.passages
        # With less room the big one no longer fits whole: it is searched instead.
        tight = await turn_documents(db, chat.id, "vault code?", remaining_tokens=1_000)
        assert [name for name, _ in tight.whole] == ["small.md"]
        assert [p.name for p in tight.passages] == ["big.md"]
        assert "vault 8800" in tight.passages[0].text
        # No room at all: nothing whole, and no passage that would overflow.
        assert not await turn_documents(db, chat.id, "vault code?", remaining_tokens=10)

    asyncio.run(scenario())
    db.close()


def test_embedded_passages_are_fused_with_bm25_and_a_failing_embedder_falls_back(
    tmp_path: Path,
):
    db = AsyncChatStore(tmp_path / "chats.db")
    text = "\n".join(
        ["The harbour master keeps the keys."] * 30
        + ["Nothing else here but filler words and more filler."] * 60
        + ["The vault opens with number 7391."]
    )

    async def scenario() -> None:
        chat = await db.run(lambda s: s.create_conversation())
        doc = ParsedDocument("log.txt", "text", (Section(text, line=1),))
        attachment = await db.run(lambda s: s.attachments.add(chat.id, doc, "indexed"))
        embedder = CountingEmbedder()
        seen: list[tuple[int, int]] = []
        done = await embed_attachment(db, attachment.id, embedder, lambda d, t: seen.append((d, t)),
                                      lambda: False)  # fmt: skip
        assert done == attachment.passages and seen[-1] == (done, done)
        assert max(embedder.calls) <= 16  # small batches: each answer parses quickly
        near = await db.run(lambda s: s.attachments.nearest(chat.id, "bag-of-words",
                                                           [1, 0, 0, 0, 0.1], 1))  # fmt: skip
        assert "vault" in near[0].text
        fused = await search(db, chat.id, "Which number opens the vault?", embedder=embedder)
        assert "7391" in fused[0].text
        # An embedder that fails gives BM25's ranking, not an error.
        plain = await search(db, chat.id, "Which number opens the vault?")
        failing = await search(db, chat.id, "Which number opens the vault?",
                               embedder=CountingEmbedder(fail=True))  # fmt: skip
        assert [h.passage_id for h in failing] == [h.passage_id for h in plain]
        # Cancelled between batches: it stops.
        stopped = await embed_attachment(db, attachment.id, embedder, lambda d, t: None,
                                         lambda: True)  # fmt: skip
        assert stopped == 0

    asyncio.run(scenario())
    db.close()


def test_sources_of_a_reply_are_kept_with_it(tmp_path: Path):
    db = AsyncChatStore(tmp_path / "chats.db")
    chat = db.sync(lambda s: s.create_conversation())
    reply = db.sync(lambda s: s.add_message(chat.id, "assistant", "It is 7391."))
    found = PassageHit(1, "handbook.pdf", "The vault opens with 7391.", 18, None, 1.0, 5)
    db.sync(lambda s: s.attachments.add_sources(reply.id, [found]))
    kept = db.sync(lambda s: s.attachments.sources(chat.id))
    assert [(h.where, h.text) for h in kept[reply.id]] == [(found.where, found.text)]
    db.sync(lambda s: s.delete_message(reply.id))
    assert db.sync(lambda s: s.attachments.sources(chat.id)) == {}
    db.close()
