"""The worker's ASGI application, assembled from its collaborators."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from hearth import __version__
from hearth.config.engines import EngineRegistry
from hearth.config.paths import default_paths
from hearth.core.model_info import LoadConfig
from hearth.engine.engine import Engine
from hearth.server.access_routes import AccessFactory, access_router
from hearth.server.admin_routes import admin_router
from hearth.server.anthropic_routes import anthropic_router
from hearth.server.body_guard import UrlGuardMiddleware
from hearth.server.engines_routes import engines_router
from hearth.server.errors import install_error_handlers
from hearth.server.infill_routes import infill_router
from hearth.server.key_refresh import KeyRefresher, KeySource
from hearth.server.listeners import EndpointListener
from hearth.server.load_routes import load_router
from hearth.server.model_manager import ModelManager
from hearth.server.ollama_routes import ollama_router
from hearth.server.openai_routes import openai_router
from hearth.server.openapi import install_openapi
from hearth.server.pipeline import Pipeline
from hearth.server.remote.hops import GatewayHopMiddleware
from hearth.server.remote.router import RemoteEngines
from hearth.server.request_log import RequestLog, RequestLogMiddleware
from hearth.server.response_store import FILE_NAME, ResponseStore
from hearth.server.responses_routes import responses_router
from hearth.server.security import AccessControl, AccessMiddleware, AccessPolicy


def create_app(
    policy: AccessPolicy,
    *,
    models: ModelManager | None = None,
    cors_origins: tuple[str, ...] = (),
    access_for: AccessFactory | None = None,
    key_source: KeySource | None = None,
) -> FastAPI:
    manager = models or ModelManager(Engine, catalog=None, base_config=LoadConfig(Path()))

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        lifecycle = asyncio.create_task(manager.run())
        background = [lifecycle]
        if key_source is not None:  # keys created or revoked while serving count at once
            background.append(asyncio.create_task(KeyRefresher(access, key_source).run()))
        try:
            yield
        finally:
            for task in background:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await stored_responses.aclose()
            await endpoint.close()
            await manager.close()
            await remote.close()

    app = FastAPI(
        lifespan=lifespan,
        title="Hearth worker",
        version=__version__,
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    install_error_handlers(app)
    app.add_middleware(UrlGuardMiddleware)  # innermost: after auth, logged
    app.add_middleware(GatewayHopMiddleware)  # another Hearth's calls: no engines (loops)
    install_openapi(app)
    request_log = RequestLog()
    remote = RemoteEngines(EngineRegistry(), observer=request_log.note_generation)
    pipeline = Pipeline(manager, observer=request_log.note_generation, remote=remote)
    app.include_router(admin_router(manager, request_log))
    app.include_router(openai_router(pipeline))
    app.include_router(ollama_router(pipeline))
    app.include_router(anthropic_router(pipeline))
    stored_responses = ResponseStore(default_paths().data_dir / FILE_NAME)  # owned here
    app.include_router(responses_router(pipeline, stored_responses))
    app.include_router(infill_router(pipeline))
    app.include_router(load_router(manager))
    access = AccessControl(replace(policy, allowed_origins=tuple(cors_origins)))
    endpoint = EndpointListener(app)
    if access_for is not None:  # the app's worker: its endpoint opens and closes live
        app.include_router(access_router(access, access_for, endpoint))
        app.include_router(engines_router(remote.registry))  # Settings → Engines: Test
    if cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(cors_origins),
            allow_methods=["GET", "POST", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type", "x-api-key", "anthropic-version"],
        )
    app.add_middleware(AccessMiddleware, control=access)
    app.add_middleware(RequestLogMiddleware, request_log=request_log)  # outermost: sees 401s
    return app
