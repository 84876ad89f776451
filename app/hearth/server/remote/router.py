"""Which requests go to a remote engine, and the models the engines list.

A model id whose first path segment names a registered engine (``gpu-box/qwen3``)
belongs to that engine; everything else stays local. The registry is re-read when its
file changes, so engines added or removed with the CLI apply to a running server; an
engine whose entry changed (URL, kind, key) gets a fresh backend.

Model lists are fetched from every engine at once, with a short timeout, and kept for
a few seconds: ``/v1/models`` stays quick when an engine is slow or down (its models
then drop out of the list, and requests for them get a 502 naming it).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import httpx

from hearth.config.engines import EngineConfigError, EngineKind, EngineRegistry, EngineSpec
from hearth.config.secrets import SecretStoreError
from hearth.core.errors import ModelNotFoundError
from hearth.core.model_info import ModelInfo
from hearth.server.generation import Generation
from hearth.server.pipeline import ChatPrompt, PipelineRequest
from hearth.server.remote.backend import (
    CONNECT_TIMEOUT_S,
    EngineObserver,
    RemoteBackend,
)
from hearth.server.remote.counting import count_tokens
from hearth.server.remote.errors import RemoteEngineError
from hearth.server.remote.hops import via_gateway
from hearth.server.remote.probe import RemoteModel, describe_error, list_models, ollama_model_id

log = logging.getLogger(__name__)

LIST_TTL_S = 10.0
LIST_TIMEOUT_S = 3.0


class RemoteEngines:
    """The pipeline's remote backend: routes requests by model id to their engine.

    Owns one :class:`RemoteBackend` (one HTTP connection pool) per engine; used only on
    the server's event loop.
    """

    def __init__(
        self,
        registry: EngineRegistry,
        *,
        observer: EngineObserver | None = None,
        connect_timeout: float = CONNECT_TIMEOUT_S,
    ) -> None:
        self.registry = registry
        self._observer = observer
        self._connect_timeout = connect_timeout
        self._backends: dict[str, RemoteBackend] = {}
        self._lists: dict[str, tuple[float, list[RemoteModel]]] = {}
        self._retired: set[asyncio.Task[None]] = set()
        self._bad_file_logged = False

    def engines(self) -> tuple[EngineSpec, ...]:
        """The registered engines; none while the engines file is unreadable (logged)."""
        try:
            engines = self.registry.engines()
        except EngineConfigError as exc:
            if not self._bad_file_logged:
                log.error("remote engines are off: %s", exc)
                self._bad_file_logged = True
            return ()
        self._bad_file_logged = False
        return engines

    def serves(self, model: str | None) -> bool:
        """Whether ``model`` names a registered engine's model (``engine/model``); never
        for a request another Hearth sent (see hops)."""
        return not via_gateway() and self._split(model) is not None

    async def resolve(self, model: str) -> ModelInfo:
        backend, remote_id = self._route(model)
        return backend.model_info(remote_id, self._context_length(backend.name, remote_id))

    async def start(self, request: PipelineRequest) -> Generation:
        backend, remote_id = self._route(request.model or "")
        info = backend.model_info(remote_id, self._context_length(backend.name, remote_id))
        return await backend.start(request, info, remote_id)

    async def count_tokens(
        self, model: str, prompt: ChatPrompt, body: dict[str, Any] | None = None
    ) -> int:
        """The engine's token count for ``prompt`` (see :mod:`.counting`)."""
        backend, remote_id = self._route(model)
        return await count_tokens(backend, remote_id, prompt, body)

    async def models(self) -> list[RemoteModel]:
        """Every engine's models (engines that do not answer in time are left out)."""
        specs = () if via_gateway() else self.engines()
        lists = await asyncio.gather(*(self._models_of(spec) for spec in specs))
        return [model for models in lists for model in models]

    async def close(self) -> None:
        backends, self._backends = list(self._backends.values()), {}
        await asyncio.gather(*(b.aclose() for b in backends), *self._retired)

    def _split(self, model: str | None) -> tuple[EngineSpec, str] | None:
        if not model or "/" not in model:
            return None
        prefix, rest = model.split("/", 1)
        spec = next((e for e in self.engines() if e.name == prefix), None)
        return (spec, rest) if spec is not None and rest else None

    def _route(self, model: str) -> tuple[RemoteBackend, str]:
        found = self._split(model)
        if found is None:
            raise ModelNotFoundError(f"No remote engine serves '{model}'.")
        spec, rest = found
        return self._backend(spec), self._remote_id(spec, rest)

    def _remote_id(self, spec: EngineSpec, requested: str) -> str:
        """The id to send: Ollama clients add ``:latest``, which other engines lack (and
        which Ollama itself assumes, so its models go by their short names too)."""
        if spec.kind is EngineKind.OLLAMA:
            return ollama_model_id(requested)
        known = {m.id for m in self._lists.get(spec.name, (0.0, []))[1]}
        return requested if requested in known else ollama_model_id(requested)

    def _context_length(self, engine: str, model: str) -> int | None:
        cached = self._lists.get(engine, (0.0, []))[1]
        return next((m.context_length for m in cached if m.id == model), None)

    def _backend(self, spec: EngineSpec) -> RemoteBackend:
        current = self._backends.get(spec.name)
        if current is not None and current.spec == spec:
            return current
        try:
            api_key = self.registry.api_key(spec)
        except SecretStoreError as exc:
            message = f"its API key cannot be read: {exc.message}"
            raise RemoteEngineError(spec.name, message) from None
        if spec.has_key and not api_key:
            raise RemoteEngineError(spec.name, "its API key is missing from the secret store.")
        if current is not None:  # the entry changed: retire the old pool
            self._retire(current)
        backend = RemoteBackend(
            spec, api_key, connect_timeout=self._connect_timeout, observer=self._observer
        )
        self._backends[spec.name] = backend
        self._lists.pop(spec.name, None)
        return backend

    def _retire(self, backend: RemoteBackend) -> None:
        task = asyncio.get_running_loop().create_task(backend.aclose())
        self._retired.add(task)
        task.add_done_callback(self._retired.discard)

    async def _models_of(self, spec: EngineSpec) -> list[RemoteModel]:
        current = self._backends.get(spec.name)
        if current is not None and current.spec != spec:  # edited: its list is stale
            self._lists.pop(spec.name, None)
        cached = self._lists.get(spec.name)
        if cached is not None and time.monotonic() - cached[0] < LIST_TTL_S:
            return cached[1]
        try:
            backend = self._backend(spec)
            fresh = await asyncio.wait_for(list_models(backend.client, spec), LIST_TIMEOUT_S)
        except (RemoteEngineError, httpx.HTTPError, TimeoutError, ValueError) as exc:
            log.warning("engine %s: could not list models (%s)", spec.name, _reason(exc))
            return cached[1] if cached is not None else []
        known = {m.id: m.context_length for m in cached[1]} if cached else {}
        merged = [m if m.context_length or m.id not in known else
                  RemoteModel(m.engine, m.id, known[m.id]) for m in fresh]  # fmt: skip
        self._lists[spec.name] = (time.monotonic(), merged)
        return merged


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RemoteEngineError):
        return exc.message
    if isinstance(exc, TimeoutError):
        return f"no answer within {LIST_TIMEOUT_S:g}s"
    return describe_error(exc)
