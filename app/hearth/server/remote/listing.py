"""Remote engines' models in the model lists of each dialect, marked remote.

OpenAI's list: ``owned_by`` is the engine and ``meta.remote`` is true. Ollama's tags:
``remote_model`` and ``remote_host``, the fields Ollama itself gives its cloud models.
"""

from __future__ import annotations

from typing import Any

from hearth.config.engines import EngineSpec
from hearth.server.ollama_format import show_json
from hearth.server.remote.probe import RemoteModel
from hearth.server.remote.router import RemoteEngines


def openai_model_json(model: RemoteModel, spec: EngineSpec | None) -> dict[str, Any]:
    return {
        "id": model.namespaced,
        "object": "model",
        "created": int(spec.added) if spec else 0,
        "owned_by": model.engine,
        "meta": {
            "remote": True,
            "engine": model.engine,
            "engine_kind": spec.kind.value if spec else None,
            "n_ctx": model.context_length,
        },
    }


def ollama_tag_json(model: RemoteModel, spec: EngineSpec | None) -> dict[str, Any]:
    name = f"{model.namespaced}:latest" if ":" not in model.id else model.namespaced
    return {
        "name": name,
        "model": name,
        "modified_at": "1970-01-01T00:00:00Z",
        "size": 0,
        "digest": "",
        "remote_model": model.id,
        "remote_host": spec.url if spec else "",
        "details": {
            "parent_model": "", "format": "", "family": "", "families": [],
            "parameter_size": "", "quantization_level": "",
        },
    }  # fmt: skip


async def openai_models(remote: object) -> list[dict[str, Any]]:
    """The engines' models for ``/v1/models`` (none when remote engines are off)."""
    if not isinstance(remote, RemoteEngines):
        return []
    specs = {spec.name: spec for spec in remote.engines()}
    return [openai_model_json(m, specs.get(m.engine)) for m in await remote.models()]


async def ollama_tags(remote: object) -> list[dict[str, Any]]:
    """The engines' models for ``/api/tags``."""
    if not isinstance(remote, RemoteEngines):
        return []
    specs = {spec.name: spec for spec in remote.engines()}
    return [ollama_tag_json(m, specs.get(m.engine)) for m in await remote.models()]


async def openai_model(remote: object, model_id: str) -> dict[str, Any] | None:
    """``GET /v1/models/{id}`` for an engine's model; None when ``model_id`` is not one."""
    if not isinstance(remote, RemoteEngines) or not remote.serves(model_id):
        return None
    info = await remote.resolve(model_id)
    engine, remote_id = info.id.split("/", 1)
    model = RemoteModel(engine, remote_id, info.n_ctx_per_slot or None)
    specs = {spec.name: spec for spec in remote.engines()}
    return openai_model_json(model, specs.get(engine))


async def ollama_show(remote: object, requested: str) -> dict[str, Any] | None:
    """``/api/show`` for an engine's model (clients such as Copilot ask before a chat);
    None when ``requested`` is not one. Engines serve tools, so it says so."""
    if not isinstance(remote, RemoteEngines) or not remote.serves(requested):
        return None
    info = await remote.resolve(requested)
    shown = show_json(info, "{{ .Prompt }}")
    shown["capabilities"] = ["completion", "tools"]
    return shown
