"""Health and Hearth's own status routes."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from hearth.core.model_info import ModelInfo
from hearth.engine.prompt_cache import PromptCacheStatus
from hearth.engine.scheduler_status import SchedulerStatus
from hearth.server.load_routes import state_json
from hearth.server.model_manager import ModelManager
from hearth.server.model_state import LifecycleState
from hearth.server.request_log import RequestLog, RequestLogEntry, RequestLogResponse
from hearth.server.residency_format import devices_json, limits_json, resident_json


def backend_json(info: ModelInfo) -> dict[str, Any]:
    """Where the model actually runs: devices and how many layers are offloaded."""
    return {"gpu_layers": info.gpu_layers, "n_layer": info.n_layer, "devices": devices_json(info)}


def speculative_json(status: SchedulerStatus | None) -> dict[str, Any]:
    """Speculative decoding since the load: drafted, accepted, and the acceptance rate."""
    drafted = status.draft_tokens if status else 0
    accepted = status.accepted_tokens if status else 0
    rate = status.acceptance if status else None
    return {
        "draft_tokens": drafted,
        "accepted_tokens": accepted,
        "acceptance": None if rate is None else round(rate, 3),
    }


def prompt_cache_json(status: PromptCacheStatus | None) -> dict[str, Any] | None:
    """The loaded model's prompt cache on disk; None when it has none."""
    if status is None:
        return None
    return {
        "folder": str(status.folder),
        "size_bytes": status.size_bytes,
        "budget_bytes": status.budget,
        "saving": status.saving,
    }


def admin_router(models: ModelManager, request_log: RequestLog | None = None) -> APIRouter:
    router = APIRouter()

    @router.get("/health")
    async def health() -> JSONResponse:
        """Whether the server can answer now, as llama-server's router and Ollama say it:
        200 "ok" while any model serves, with the lifecycle's change in progress or its
        failure (a load or unload beside the serving models) in ``load``; 200 "ok" with
        no model when none is loaded (a request naming one loads it). 503 only when
        nothing can serve: "loading"/"unloading" with the progress, or "error" when the
        last load failed."""
        state = models.state
        serving = models.residency.find(None)
        if serving is not None:
            if state.state is LifecycleState.READY:
                return JSONResponse({"status": "ok", "model": state.model_id})
            # A model loads, unloads or failed to load beside models that still serve:
            # the server is healthy; that change is reported as load status is.
            body = {"status": "ok", "model": serving.info.id, "load": state_json(state)}
            return JSONResponse(body)
        if state.state in (LifecycleState.LOADING, LifecycleState.UNLOADING):
            return JSONResponse(
                {
                    "status": state.state.value,
                    "progress": round(state.progress, 4),
                    "model": state.model_id,
                },
                status_code=503,
            )
        if state.state is LifecycleState.ERROR:
            return JSONResponse(
                {"status": "error", "error": state.error, "model": state.model_id},
                status_code=503,
            )
        # Nothing loaded and nothing loading: requests naming a model load it (JIT).
        return JSONResponse({"status": "ok", "model": None})

    @router.get("/hearth/v1/status")
    async def status() -> dict[str, Any]:
        """The lifecycle, every loaded model (``models``, least recently used first) and
        the limits they share; the single-model fields (``model``, ``slots`` ...) are the
        most recently used model's, as before several could be loaded."""
        latest = models.residency.find(None)
        engine = latest.engine if latest is not None else None
        info = latest.info if latest is not None else None
        scheduler = engine.status() if engine is not None else None
        residents = models.residents()
        return {
            "state": models.state.state.value,
            "load_id": models.state.load_id,
            "expires_in_s": models.expires_in(),
            "model": info.id if info else None,
            "slots": [
                {"id": s.seq_id, "busy": s.busy, "cached_tokens": s.cached_tokens}
                for s in (scheduler.slots if scheduler else ())
            ],
            "queue_depth": scheduler.queue_depth if scheduler else 0,
            "decode_tokens_per_s": round(scheduler.decode_tokens_per_s, 2) if scheduler else 0.0,
            "speculative": speculative_json(scheduler),
            "backend": backend_json(info) if info else None,
            "prompt_cache": prompt_cache_json(engine.prompt_cache_status() if engine else None),
            "models": [resident_json(r) for r in residents],
            "limits": limits_json(models.residency.limits),
            "memory_used_bytes": sum(r.memory_bytes for r in residents),
            "load_queue": models.waiting_loads,
        }

    @router.get("/hearth/v1/requests", response_model=RequestLogResponse)
    async def requests(limit: int = 50) -> RequestLogResponse:
        """The live request log: recent HTTP requests with their status, newest first;
        generations carry their tokens, TTFT and tok/s."""
        latest = models.residency.find(None)
        model = latest.info.id if latest is not None else None
        entries = request_log.recent(max(1, min(limit, 200))) if request_log else []
        return RequestLogResponse(model=model, requests=[RequestLogEntry.of(e) for e in entries])

    return router
