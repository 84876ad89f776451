"""What an engine is and which models it serves, asked over HTTP.

Models come from ``/v1/models`` (OpenAI kinds) or ``/api/tags`` with ``/api/show``
(Ollama). What the engine is comes from the route only it has: ``/version`` (vLLM),
``/props`` (llama-server), ``/hearth/v1/status`` (Hearth) or ``/api/version``
(Ollama). The context length is read where the engine says it: vLLM's
``max_model_len`` in its model list, llama-server's ``n_ctx`` in ``/props``, Hearth's
``meta.n_ctx``, Ollama's ``<arch>.context_length`` in ``/api/show``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, replace
from typing import Any

import httpx

from hearth.config.engines import EngineKind, EngineSpec
from hearth.server.remote.hops import HOP_HEADER

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 5.0
_MAX_SHOW = 16  # /api/show calls per probe: context lengths for the first models only


@dataclass(frozen=True)
class RemoteModel:
    """One model an engine serves, under the id the engine knows it by."""

    engine: str
    id: str
    context_length: int | None = None

    @property
    def namespaced(self) -> str:
        """The id clients use at Hearth's endpoint: ``engine/model``."""
        return f"{self.engine}/{self.id}"


@dataclass(frozen=True)
class ProbeResult:
    """An engine's health: reachable or not, how fast, what it is, what it serves."""

    engine: str
    ok: bool
    latency_ms: float
    identity: str = ""
    models: tuple[RemoteModel, ...] = ()
    error: str | None = None


def auth_headers(api_key: str | None) -> dict[str, str]:
    """What Hearth sends with every call to an engine: the hop mark and its key."""
    headers = {HOP_HEADER: "1"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def ollama_model_id(name: str) -> str:
    """Ollama's ``name:latest`` is the model's plain name everywhere else."""
    return name.removesuffix(":latest")


def parse_openai_models(engine: str, body: Any) -> list[RemoteModel]:
    """``/v1/models``: ``data[].id``, with vLLM's ``max_model_len`` or Hearth's and
    llama-server's ``meta.n_ctx`` / ``meta.n_ctx_train`` as the context length."""
    items = body.get("data") if isinstance(body, dict) else None
    out: list[RemoteModel] = []
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        raw_meta = item.get("meta")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        context = item.get("max_model_len") or meta.get("n_ctx") or meta.get("n_ctx_train")
        out.append(RemoteModel(engine, item["id"], _positive(context)))
    return out


def parse_ollama_tags(engine: str, body: Any) -> list[RemoteModel]:
    items = body.get("models") if isinstance(body, dict) else None
    out: list[RemoteModel] = []
    for item in items if isinstance(items, list) else ():
        name = item.get("name") or item.get("model") if isinstance(item, dict) else None
        if isinstance(name, str) and name:
            out.append(RemoteModel(engine, ollama_model_id(name)))
    return out


def ollama_context_length(show: Any) -> int | None:
    """``/api/show``: the ``num_ctx`` it runs with, else ``<arch>.context_length``."""
    if not isinstance(show, dict):
        return None
    for line in str(show.get("parameters") or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "num_ctx":
            return _positive(parts[1])
    info = show.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if str(key).endswith(".context_length"):
                return _positive(value)
    return None


async def list_models(client: httpx.AsyncClient, spec: EngineSpec) -> list[RemoteModel]:
    """The engine's models (no context lengths from Ollama: see :func:`probe`)."""
    if spec.kind is EngineKind.OLLAMA:
        response = await client.get("/api/tags")
        response.raise_for_status()
        return parse_ollama_tags(spec.name, response.json())
    response = await client.get("/v1/models")
    response.raise_for_status()
    return parse_openai_models(spec.name, response.json())


async def probe(
    spec: EngineSpec, api_key: str | None, *, timeout: float = PROBE_TIMEOUT_S
) -> ProbeResult:
    """Ask the engine for its models and identity; never raises for a bad engine."""
    started = time.perf_counter()
    async with httpx.AsyncClient(
        base_url=spec.url, headers=auth_headers(api_key), timeout=timeout
    ) as client:
        try:
            models = await list_models(client, spec)
            latency_ms = (time.perf_counter() - started) * 1000.0
            identity, context = await _identify(client, spec)
            if spec.kind is EngineKind.OLLAMA and not identity.startswith("Hearth"):
                models = await _with_ollama_contexts(client, models)
            elif context is not None:  # what the server runs with, not what it was trained on
                models = [replace(m, context_length=context) for m in models]
        except httpx.HTTPStatusError as exc:
            status = exc.response.status_code
            hint = " (check its API key)" if status in (401, 403) else ""
            return ProbeResult(spec.name, False, _ms(started), error=f"HTTP {status}{hint}")
        except (httpx.HTTPError, ValueError) as exc:
            return ProbeResult(spec.name, False, _ms(started), error=describe_error(exc))
    return ProbeResult(spec.name, True, latency_ms, identity, tuple(models))


async def _identify(client: httpx.AsyncClient, spec: EngineSpec) -> tuple[str, int | None]:
    """What the engine is, and a context length it states for all its models."""
    if spec.kind is EngineKind.OLLAMA:
        version = await _get_json(client, "/api/version")
        if isinstance(version, dict) and version.get("hearth"):
            return f"Hearth {version['hearth']}", None
        found = version.get("version") if isinstance(version, dict) else None
        return (f"Ollama {found}" if found else "Ollama"), None
    hearth, props, vllm = await asyncio.gather(
        _get_json(client, "/hearth/v1/status"),
        _get_json(client, "/props"),
        _get_json(client, "/version"),
    )
    if isinstance(hearth, dict) and "slots" in hearth:
        version = await _get_json(client, "/api/version")
        number = version.get("hearth") if isinstance(version, dict) else None
        return (f"Hearth {number}" if number else "Hearth"), None
    llama_server = ("build_info", "default_generation_settings")
    if isinstance(props, dict) and any(key in props for key in llama_server):
        settings = props.get("default_generation_settings") or {}
        context = settings.get("n_ctx") if isinstance(settings, dict) else None
        build = props.get("build_info")
        return (f"llama-server {build}" if build else "llama-server"), _positive(context)
    if isinstance(vllm, dict) and isinstance(vllm.get("version"), str):
        return f"vLLM {vllm['version']}", None
    return "OpenAI-compatible", None


async def _with_ollama_contexts(
    client: httpx.AsyncClient, models: list[RemoteModel]
) -> list[RemoteModel]:
    async def one(model: RemoteModel) -> RemoteModel:
        try:
            response = await client.post("/api/show", json={"model": model.id})
            if response.status_code == 200:
                return replace(model, context_length=ollama_context_length(response.json()))
        except (httpx.HTTPError, ValueError) as exc:
            log.debug("show %s on %s: %s", model.id, model.engine, describe_error(exc))
        return model

    head = await asyncio.gather(*(one(m) for m in models[:_MAX_SHOW]))
    return [*head, *models[_MAX_SHOW:]]


async def _get_json(client: httpx.AsyncClient, path: str) -> Any:
    """The JSON at ``path``, or None when the engine has no such route (or fails)."""
    try:
        response = await client.get(path)
        return response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


def _positive(value: object) -> int | None:
    try:
        number = int(str(value))
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0


def describe_error(exc: BaseException) -> str:
    """A transport error in words (httpx's messages are sometimes empty)."""
    text = str(exc).strip()
    if isinstance(exc, httpx.ConnectTimeout):
        return "no connection within the timeout"
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect ({text})" if text else "cannot connect"
    if isinstance(exc, httpx.TimeoutException):
        return "no answer within the timeout"
    return text or type(exc).__name__
