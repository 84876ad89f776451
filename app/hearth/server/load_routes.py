"""Switching models in a running worker: load a library model by name (with progress
events), cancel, unload. The model manager does the work; this is its admin edge."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from hearth.core.errors import InvalidRequestError
from hearth.core.model_info import LoadConfig
from hearth.engine.engine import model_id_for
from hearth.server.errors import ApiError
from hearth.server.model_manager import ModelManager
from hearth.server.model_state import ModelState
from hearth.server.openai_format import sse
from hearth.server.openapi import json_body
from hearth.server.request_body import parse_body

log = logging.getLogger(__name__)


_SETTABLE = frozenset(f.name for f in dataclasses.fields(LoadConfig)) - {"model_path"}
_LOAD_CONFIG = TypeAdapter(LoadConfig)


class UnloadRequest(BaseModel):
    """``{}`` unloads every model; ``{"model": NAME}`` only that one."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(default=None, min_length=1, description="a loaded model's name")


class LoadRequest(BaseModel):
    """``{"model": NAME, ...}`` plus any of LoadConfig's settings by its field names
    (``n_ctx``, ``n_gpu_layers``, ``cache_type_k`` ...): the settings are LoadConfig's
    own, checked by its own rules, never a second list of them."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(
        min_length=1, description="a library model's name, as GET /v1/models lists it"
    )
    replace: bool = Field(
        default=False,
        description="unload the other loaded models first (default: load alongside them)",
    )

    def changes(self) -> dict[str, Any]:
        """The settings this request sets; the rest come from the last good load."""
        extra = dict(self.model_extra or {})
        unknown = sorted(set(extra) - _SETTABLE)
        if unknown:
            raise InvalidRequestError(
                f"Unknown load setting '{unknown[0]}'. Settable: {', '.join(sorted(_SETTABLE))}.",
                param=unknown[0],
            )
        return extra


def checked(config: LoadConfig) -> LoadConfig:
    """``config`` with its values of the right types, or a 400 that names the field."""
    try:
        typed = _LOAD_CONFIG.validate_python(dataclasses.asdict(config))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise InvalidRequestError(f"{field}: {first['msg']}", param=field) from None
    problems = typed.problems()
    if problems:
        raise InvalidRequestError(problems[0])
    return typed


def state_json(state: ModelState) -> dict[str, Any]:
    return {
        "state": state.state.value,
        "progress": round(state.progress, 4),
        "model": state.model_id,
        "error": state.error,
        "load_id": state.load_id,
    }


async def state_changes(manager: ModelManager, follow: bool) -> AsyncIterator[ModelState]:
    """Each lifecycle state from now on; without ``follow``, until one settles."""
    with manager.subscribe() as queue:
        while True:
            state = await queue.get()
            yield state
            if not follow and state.settled:
                return


def load_router(models: ModelManager) -> APIRouter:
    router = APIRouter(prefix="/hearth/v1")

    @router.post("/load", status_code=202, openapi_extra=json_body(LoadRequest))
    async def load(request: Request) -> dict[str, Any]:
        body = await parse_body(request, LoadRequest)
        config = checked(models.config_for(body.model, **body.changes()))
        if not body.replace:  # pinned models never make room: say so now, not later
            await models.refuse_if_pinned(config)
        running = models.load_in_flight()
        if running == config:  # asked twice: the same load, already on its way
            return state_json(models.state)
        if running is not None:
            loading = model_id_for(running.model_path)
            raise ApiError(
                409,
                f"'{loading}' is loading now; cancel it (POST /hearth/v1/load/cancel) or "
                f"wait until it is done, then load '{body.model}'.",
                code="busy",
            )
        return state_json(models.start_load(config, replace=body.replace))

    @router.post("/load/cancel")
    async def cancel() -> dict[str, Any]:
        return {"cancelled": models.cancel_load()}

    @router.post("/unload", openapi_extra=json_body(UnloadRequest))
    async def unload(request: Request) -> dict[str, Any]:
        body = UnloadRequest()
        if request.headers.get("content-length", "0") != "0":  # no body (as before): all
            body = await parse_body(request, UnloadRequest)
        await models.unload(body.model)
        return state_json(models.state)

    @router.get("/events")
    async def events(follow: bool = False) -> StreamingResponse:
        """Each change of the model's state, pushed as it happens; without ``follow``,
        the stream ends once the state settles (ready, idle or error)."""

        async def stream() -> AsyncIterator[bytes]:
            async for state in state_changes(models, follow):
                yield sse(state_json(state))

        return StreamingResponse(
            stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
        )

    return router
