"""Switching models in a running worker: load a library model by name (with progress
events), cancel, unload. The model manager does the work; this is its admin edge."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from hearth.core.model_info import FlashAttention
from hearth.server.errors import ApiError
from hearth.server.model_manager import ModelManager, state_changes
from hearth.server.model_state import ModelState
from hearth.server.openai_format import sse
from hearth.server.openapi import json_body
from hearth.server.request_body import parse_body

log = logging.getLogger(__name__)


class LoadRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = Field(
        min_length=1, description="a library model's name, as GET /v1/models lists it"
    )
    n_ctx: int | None = Field(default=None, ge=16)
    n_parallel: int | None = Field(default=None, ge=1, le=64)
    n_gpu_layers: int | None = None
    n_threads: int | None = Field(default=None, ge=0)
    cache_type_k: str | None = None
    cache_type_v: str | None = None
    flash_attention: FlashAttention | None = None

    def changes(self) -> dict[str, Any]:
        """The settings this request sets; the rest come from the last good load."""
        return {k: v for k, v in self.model_dump(exclude={"model"}).items() if v is not None}


def state_json(state: ModelState) -> dict[str, Any]:
    return {
        "state": state.state.value,
        "progress": round(state.progress, 4),
        "model": state.model_id,
        "error": state.error,
        "load_id": state.load_id,
    }


def load_router(models: ModelManager) -> APIRouter:
    router = APIRouter(prefix="/hearth/v1")

    @router.post("/load", status_code=202, openapi_extra=json_body(LoadRequest))
    async def load(request: Request) -> dict[str, Any]:
        body = await parse_body(request, LoadRequest)
        config = models.config_for(body.model, **body.changes())
        if models.busy:
            raise ApiError(409, "A model is already loading; cancel it or wait.", code="busy")
        return state_json(models.start_load(config))

    @router.post("/load/cancel")
    async def cancel() -> dict[str, Any]:
        return {"cancelled": models.cancel_load()}

    @router.post("/unload")
    async def unload() -> dict[str, Any]:
        await models.unload()
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
