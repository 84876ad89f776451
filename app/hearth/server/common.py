"""Plumbing shared by the generation routes of every dialect."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from fastapi import Request

from hearth.engine.engine import Engine
from hearth.server import request_ids
from hearth.server.model_manager import ModelManager

log = logging.getLogger(__name__)

R = TypeVar("R")


def in_flight(
    models: ModelManager, engine: Engine | None = None
) -> Callable[[Callable[[Request], Awaitable[R]]], Callable[[Request], Awaitable[R]]]:
    """Decorate a route that uses the model, for its whole run: the idle timer never
    unloads the model under it, and with ``engine`` (generation routes) the scheduler
    knows the request (by its id) is coming before it is queued."""

    def decorate(handler: Callable[[Request], Awaitable[R]]) -> Callable[[Request], Awaitable[R]]:
        @functools.wraps(handler)
        async def tracked(request: Request) -> R:
            request_id = request_ids.assign(request.scope)
            arriving = engine.incoming(request_id) if engine else contextlib.nullcontext()
            with models.in_use(), arriving:
                return await handler(request)

        return tracked

    return decorate


def request_id(request: Request) -> str:
    """The id the HTTP edge gave this request."""
    return request_ids.assign(request.scope)
