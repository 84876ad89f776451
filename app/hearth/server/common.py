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

log = logging.getLogger(__name__)

_DISCONNECT_POLL_S = 0.25

R = TypeVar("R")


def counts_arrival(
    engine: Engine,
) -> Callable[[Callable[[Request], Awaitable[R]]], Callable[[Request], Awaitable[R]]]:
    """Decorate a generation route so the engine knows of the request from its arrival."""

    def decorate(handler: Callable[[Request], Awaitable[R]]) -> Callable[[Request], Awaitable[R]]:
        @functools.wraps(handler)
        async def counted(request: Request) -> R:
            with engine.incoming():
                return await handler(request)

        return counted

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
