"""``/hearth/v1/engines/...``: the app's Settings → Engines asks its worker to test an
engine, because the probe (``server/remote/probe.py``) lives on the server side and
the GUI may not import it.

- ``POST /hearth/v1/engines/test``: test what the user typed, before it is saved (the
  key travels once, over the private loopback listener, and is never sent back);
  ``use_saved_key`` tests an edited engine with the key already stored for ``name``.
- ``POST /hearth/v1/engines/{name}/test``: test a registered engine as saved.

The registry itself (``config/engines.py``) is Qt-free and the GUI writes it directly,
as ``hearth engines`` does; this worker's router sees each change (it re-reads the
file when it changes), so nothing here writes it. The routes are only on the app's
worker (its per-launch token opens ``/hearth/*``), not on a headless ``hearth serve``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from hearth.config.engines import (
    EngineConfigError,
    EngineKind,
    EngineRegistry,
    EngineSpec,
    check_name,
    normalize_url,
)
from hearth.config.secrets import SecretStoreError
from hearth.server.errors import ApiError
from hearth.server.remote.probe import ProbeResult, probe

log = logging.getLogger(__name__)


class EngineDraft(BaseModel):
    """An engine as typed in the app's form (not saved yet)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=63)
    url: str = Field(min_length=1, max_length=2048)
    kind: Literal["openai", "ollama"] = "openai"
    api_key: str | None = Field(default=None, max_length=4096)
    use_saved_key: bool = False  # an edit that keeps the stored key of engine ``name``


class ProbedModel(BaseModel):
    id: str  # namespaced: engine/model, as clients name it at Hearth's endpoint
    context_length: int | None = None


class EngineTestResult(BaseModel):
    """What the app shows after a test: reachable or why not, how fast, what it serves."""

    engine: str
    ok: bool
    latency_ms: float
    identity: str = ""
    error: str | None = None
    models: list[ProbedModel] = []


def _result(found: ProbeResult) -> EngineTestResult:
    return EngineTestResult(
        engine=found.engine,
        ok=found.ok,
        latency_ms=round(found.latency_ms, 1),
        identity=found.identity,
        error=found.error,
        models=[ProbedModel(id=m.namespaced, context_length=m.context_length)
                for m in found.models],
    )  # fmt: skip


def engines_router(registry: EngineRegistry) -> APIRouter:
    """Tests remote engines for the app; ``registry`` is the one the router reads."""
    router = APIRouter()

    async def saved_key(spec: EngineSpec | None) -> str | None:
        if spec is None or not spec.has_key:
            return None
        try:
            return await asyncio.to_thread(registry.api_key, spec)
        except SecretStoreError as exc:
            message = f"The engine's key cannot be read: {exc.message}"
            code = "secret_store_unavailable"
            raise ApiError(503, message, type_="server_error", code=code) from None

    async def run(spec: EngineSpec, api_key: str | None) -> EngineTestResult:
        found = _result(await probe(spec, api_key))
        outcome = "ok" if found.ok else found.error
        log.info("engine %s tested: %s, %.0f ms", spec.name, outcome, found.latency_ms)
        return found

    @router.post("/hearth/v1/engines/test", response_model=EngineTestResult)
    async def test_draft(draft: EngineDraft) -> EngineTestResult:
        kind = EngineKind(draft.kind)
        try:
            spec = EngineSpec(check_name(draft.name), normalize_url(draft.url, kind), kind)
        except EngineConfigError as exc:
            raise ApiError(400, str(exc), code="invalid_engine") from None
        api_key = draft.api_key or None
        if api_key is None and draft.use_saved_key:
            saved = await asyncio.to_thread(_get, registry, draft.name)
            api_key = await saved_key(saved)
        return await run(spec, api_key)

    @router.post("/hearth/v1/engines/{name}/test", response_model=EngineTestResult)
    async def test_saved(name: str) -> EngineTestResult:
        spec = await asyncio.to_thread(_get, registry, name)
        if spec is None:
            raise ApiError(404, f"No engine named '{name}'.", code="engine_not_found")
        return await run(spec, await saved_key(spec))

    return router


def _get(registry: EngineRegistry, name: str) -> EngineSpec | None:
    try:
        return registry.get(name)
    except EngineConfigError as exc:
        raise ApiError(409, str(exc), code="engines_file_unreadable") from None
