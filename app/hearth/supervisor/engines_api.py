"""The app's side of ``/hearth/v1/engines/.../test``: probing a remote engine.

The probe itself is the server's (``server/remote/probe.py``, the one the router and
``hearth engines ls`` use); the GUI may not import the server, so it asks its worker.
The engines list is read and written through ``config/engines.py`` directly.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

import httpx

from hearth.supervisor.client_types import WorkerError, opt_int, opt_str

log = logging.getLogger(__name__)

# The probe waits up to 5 s per call, and asks a few in turn (models, identity, and
# Ollama's /api/show): leave it room to say why, rather than timing out here first.
TEST_TIMEOUT = httpx.Timeout(10.0, read=30.0)


@dataclass(frozen=True)
class TestedModel:
    id: str  # namespaced: engine/model
    context_length: int | None = None


@dataclass(frozen=True)
class EngineTest:
    """An engine's answer to a test: reachable or why not, how fast, what it serves."""

    __test__ = False  # not a pytest test class, whatever its name

    engine: str
    ok: bool
    latency_ms: float
    identity: str = ""
    error: str | None = None
    models: tuple[TestedModel, ...] = ()


def parse_engine_test(data: Any) -> EngineTest:
    if not isinstance(data, dict) or not isinstance(data.get("ok"), bool):
        raise WorkerError("The worker sent a malformed engine test.")
    raw = data.get("models")
    models: list[Any] = raw if isinstance(raw, list) else []
    latency = data.get("latency_ms")
    return EngineTest(
        engine=str(data.get("engine") or ""),
        ok=data["ok"],
        latency_ms=float(latency) if isinstance(latency, int | float) else 0.0,
        identity=str(data.get("identity") or ""),
        error=opt_str(data.get("error")),
        models=tuple(
            TestedModel(str(m["id"]), opt_int(m.get("context_length")))
            for m in models
            if isinstance(m, dict) and isinstance(m.get("id"), str)
        ),
    )


class AdminPoster(Protocol):
    """What the engine tests need of the worker's client: an admin POST (``WorkerClient``
    is one; naming only this keeps the client and this module out of a circle)."""

    async def post_json(
        self, path: str, body: dict[str, Any] | None = None, *, timeout: httpx.Timeout | None = None
    ) -> Any: ...


class EnginesApi:
    """``WorkerClient.engines``: tests never raise for a bad engine (``ok`` is False
    and ``error`` says why); a bad form or an unreadable key store is a WorkerError."""

    def __init__(self, client: AdminPoster) -> None:
        self._client = client

    async def test(
        self,
        name: str,
        url: str,
        kind: str = "openai",
        *,
        api_key: str | None = None,
        use_saved_key: bool = False,
    ) -> EngineTest:
        """Test an engine as typed (not saved); ``use_saved_key`` sends the key stored
        for ``name`` when ``api_key`` is empty (an edit that keeps its key)."""
        body = {"name": name, "url": url, "kind": kind, "api_key": api_key or None,
                "use_saved_key": use_saved_key}  # fmt: skip
        data = await self._client.post_json("/hearth/v1/engines/test", body, timeout=TEST_TIMEOUT)
        return parse_engine_test(data)

    async def test_saved(self, name: str) -> EngineTest:
        """Test a registered engine with its stored key."""
        path = f"/hearth/v1/engines/{quote(name, safe='')}/test"
        return parse_engine_test(await self._client.post_json(path, timeout=TEST_TIMEOUT))
