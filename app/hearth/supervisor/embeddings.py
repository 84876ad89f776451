"""The worker's embedding model as the chat's documents' ``Embedder``.

An embedding model loaded in the worker (its ``/v1/models`` entry lists the
"embedding" capability) ranks a chat's passages beside BM25 (``chats/retrieval.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from hearth.chats.retrieval import EmbeddingError
from hearth.supervisor.client import WorkerClient, WorkerError

log = logging.getLogger(__name__)


class WorkerEmbedder:
    """An ``Embedder`` over the worker's ``/v1/embeddings`` with one model."""

    def __init__(self, client: WorkerClient, model: str) -> None:
        self._client = client
        self._model = model

    @property
    def model(self) -> str:
        return self._model

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        try:
            return await self._client.embeddings(texts, model=self._model)
        except WorkerError as exc:
            raise EmbeddingError(exc.message) from exc


async def find_embedder(client: WorkerClient | None) -> WorkerEmbedder | None:
    """The worker's loaded embedding model, if it has one."""
    if client is None:
        return None
    try:
        metas = await client.model_meta()
    except WorkerError as exc:
        log.info("no model list for embeddings: %s", exc)
        return None
    model = next((m.id for m in metas if "embedding" in m.capabilities and not m.remote), None)
    return WorkerEmbedder(client, model) if model is not None else None
