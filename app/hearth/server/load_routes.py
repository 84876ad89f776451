"""Switching models in a running worker: load (with progress events), cancel, unload."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from hearth.core.errors import HearthError, InvalidRequestError
from hearth.core.model_info import FlashAttention, LoadConfig
from hearth.engine.engine import Engine, EngineState, LoadState
from hearth.server.errors import ApiError
from hearth.server.openai_format import sse
from hearth.server.openapi import json_body
from hearth.server.request_body import parse_body

log = logging.getLogger(__name__)

_EVENT_POLL_S = 0.05
_TERMINAL = (LoadState.READY, LoadState.ERROR, LoadState.IDLE)


class LoadRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, description="path of a .gguf file on the worker's disk")
    n_ctx: int | None = Field(default=None, ge=16)
    n_parallel: int | None = Field(default=None, ge=1, le=64)
    n_gpu_layers: int | None = None
    n_threads: int | None = Field(default=None, ge=0)
    cache_type_k: str | None = None
    cache_type_v: str | None = None
    flash_attention: FlashAttention | None = None

    def apply(self, base: LoadConfig | None) -> LoadConfig:
        changes: dict[str, Any] = {
            k: v for k, v in self.model_dump(exclude={"model"}).items() if v is not None
        }
        path = Path(self.model).expanduser()
        if base is None:
            return LoadConfig(model_path=path, **changes)
        return dataclasses.replace(base, model_path=path, **changes)


def state_json(state: EngineState) -> dict[str, Any]:
    return {
        "state": state.state.value,
        "progress": round(state.progress, 4),
        "model": state.model_id,
        "error": state.error,
    }


def load_router(engine: Engine) -> APIRouter:
    router = APIRouter(prefix="/hearth/v1")
    busy = threading.Lock()  # one load at a time

    @router.post("/load", status_code=202, openapi_extra=json_body(LoadRequest))
    async def load(request: Request) -> dict[str, Any]:
        body = await parse_body(request, LoadRequest)
        config = body.apply(engine.config)
        if not config.model_path.is_file():
            raise InvalidRequestError(f"No such model file: {config.model_path}", param="model")
        if not busy.acquire(blocking=False):
            raise ApiError(409, "A model is already loading; cancel it or wait.", code="busy")

        def run() -> None:
            try:
                engine.load(config)
            except HearthError as exc:
                log.warning("load of %s failed: %s", config.model_path, exc.message)
            finally:
                busy.release()

        engine.mark_loading(config)
        threading.Thread(target=run, name="hearth-load", daemon=True).start()
        return state_json(engine.state)

    @router.post("/load/cancel")
    async def cancel() -> dict[str, Any]:
        loading = engine.state.state is LoadState.LOADING
        engine.cancel_load()
        return {"cancelled": loading}

    @router.post("/unload")
    async def unload() -> dict[str, Any]:
        await asyncio.to_thread(engine.unload)
        return state_json(engine.state)

    @router.get("/events", response_model=None)
    async def events(follow: bool = False) -> StreamingResponse | JSONResponse:
        return StreamingResponse(
            _state_events(engine, follow),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
        )

    return router


async def _state_events(engine: Engine, follow: bool) -> AsyncIterator[bytes]:
    """Each change of the load state; without ``follow``, ends once a load settles."""
    last: EngineState | None = None
    while True:
        state = engine.state
        if state != last:
            yield sse(state_json(state))
            last = state
            if not follow and state.state in _TERMINAL:
                return
        await asyncio.sleep(_EVENT_POLL_S)
