"""A chat's passages ranked by the worker's embedding model and fused with BM25: a real
``hearth serve`` of a tiny embedding model (mean pooling, no chat template), reached
through ``WorkerClient`` as the chat reaches it (issue 24)."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

from hearth.chats import AsyncChatStore
from hearth.chats.doc_parse import ParsedDocument, Section
from hearth.chats.retrieval import embed_attachment, search
from hearth.supervisor import WorkerClient
from hearth.supervisor.embeddings import find_embedder
from server_process import start_serve

LINES = [f"Entry {i}: the team reviewed the schedule and the budget." for i in range(200)]
LINES[150] = "Entry 150: Marisol Quint was appointed harbour master of Port Elwyn."


def test_the_workers_embedding_model_ranks_passages_beside_bm25(
    tiny_embedding_model: Path, tmp_path: Path
):
    server = start_serve(tiny_embedding_model, tmp_path, ctx=2048, parallel=1)
    db = AsyncChatStore(tmp_path / "chats.db")

    async def scenario() -> None:
        async with WorkerClient(server.base_url) as client:
            embedder = await find_embedder(client)
            assert embedder is not None and embedder.model.startswith("hearth-tiny-embed")
            vectors = await embedder.embed(["the fire is warm", "water runs down"])
            assert len(vectors) == 2 and len(vectors[0]) == 256
            assert all(abs(math.hypot(*v) - 1) < 1e-3 for v in vectors)

            doc = ParsedDocument("log.txt", "text", (Section("\n".join(LINES), line=1),))
            chat = await db.run(lambda s: s.create_conversation())
            attachment = await db.run(lambda s: s.attachments.add(chat.id, doc, "indexed"))
            done = await embed_attachment(db, attachment.id, embedder, lambda d, t: None,
                                          lambda: False)  # fmt: skip
            assert done == attachment.passages > 5
            # A passage's own text is nearest to itself (cosine 1) among the chat's.
            texts = await db.run(lambda s: s.attachments.passage_texts(attachment.id))
            pid, text = texts[3]
            [query] = await embedder.embed([text])
            near = await db.run(lambda s: s.attachments.nearest(chat.id, embedder.model,
                                                               query, 3))  # fmt: skip
            assert near[0].passage_id == pid and near[0].score > 0.999
            # Fused with BM25, the planted passage still comes first, with its line.
            hits = await search(db, chat.id, "Who is harbour master of Port Elwyn?",
                                embedder=embedder)  # fmt: skip
            assert "Marisol Quint" in hits[0].text and hits[0].line is not None

    try:
        asyncio.run(scenario())
    finally:
        db.close()
        server.stop()


def test_a_chat_model_is_not_taken_for_an_embedder(serve_q8):
    async def scenario() -> None:
        async with WorkerClient(serve_q8.base_url) as client:
            assert await find_embedder(client) is None

    asyncio.run(scenario())
