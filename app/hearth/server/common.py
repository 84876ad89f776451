"""Plumbing shared by the generation routes of every dialect."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from fastapi import Request

from hearth.server import request_ids
from hearth.server.model_manager import ModelManager

log = logging.getLogger(__name__)

R = TypeVar("R")


def in_flight(
    models: ModelManager,
) -> Callable[[Callable[[Request], Awaitable[R]]], Callable[[Request], Awaitable[R]]]:
    """Decorate a route that uses a model, for its whole run: the model it resolves (by
    the request's id) is never evicted nor unloaded for idleness under it, and its
    scheduler knows the request is coming from then until it is queued."""

    def decorate(handler: Callable[[Request], Awaitable[R]]) -> Callable[[Request], Awaitable[R]]:
        @functools.wraps(handler)
        async def tracked(request: Request) -> R:
            with models.request(request_ids.assign(request.scope)):
                return await handler(request)

        return tracked

    return decorate


def request_id(request: Request) -> str:
    """The id the HTTP edge gave this request."""
    return request_ids.assign(request.scope)
