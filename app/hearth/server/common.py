"""Plumbing shared by the OpenAI and Ollama routes: collecting a whole stream."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from fastapi import Request

from hearth.core.generation import Finished, TextDelta, TokenLogprob
from hearth.engine.engine import Engine, GenerationStream
from hearth.server.model_manager import ModelManager

log = logging.getLogger(__name__)

_DISCONNECT_POLL_S = 0.25

R = TypeVar("R")


def in_flight(
    models: ModelManager, engine: Engine | None = None
) -> Callable[[Callable[[Request], Awaitable[R]]], Callable[[Request], Awaitable[R]]]:
    """Decorate a route that uses the model, for its whole run: the idle timer never
    unloads the model under it, and with ``engine`` (generation routes) the scheduler
    knows the request is coming before it is queued."""

    def decorate(handler: Callable[[Request], Awaitable[R]]) -> Callable[[Request], Awaitable[R]]:
        @functools.wraps(handler)
        async def tracked(request: Request) -> R:
            with models.in_use(), engine.incoming() if engine else contextlib.nullcontext():
                return await handler(request)

        return tracked

    return decorate


@dataclass(frozen=True)
class Collected:
    text: str
    finished: Finished
    logprobs: tuple[TokenLogprob, ...] = ()


async def collect(request: Request, stream: GenerationStream) -> Collected:
    """Gather a whole completion, cancelling it if the client goes away meanwhile."""
    parts: list[str] = []
    logprobs: list[TokenLogprob] = []

    async def consume() -> Finished:
        async for event in stream:
            if isinstance(event, TextDelta):
                parts.append(event.text)
                logprobs.extend(event.logprobs)
            elif isinstance(event, Finished):
                return event
        raise RuntimeError("generation ended without a Finished event")

    task = asyncio.ensure_future(consume())
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=_DISCONNECT_POLL_S)
            if done:
                return Collected("".join(parts), task.result(), tuple(logprobs))
            if await request.is_disconnected():
                log.info("client disconnected; cancelling generation")
                stream.cancel()
    finally:
        if not task.done():
            stream.cancel()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
