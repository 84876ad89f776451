"""Plumbing shared by the OpenAI and Ollama routes: model lookup, collecting a stream."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from fastapi import Request

from hearth.core.errors import ModelNotFoundError, ModelNotLoadedError
from hearth.core.generation import Finished, TextDelta, TokenLogprob
from hearth.core.model_info import ModelInfo
from hearth.engine.engine import Engine, GenerationStream

log = logging.getLogger(__name__)

_DISCONNECT_POLL_S = 0.25


def resolve_model(engine: Engine, requested: str | None) -> ModelInfo:
    info = engine.info
    if info is None:
        raise ModelNotLoadedError("No model is loaded yet; wait for /health to report ok.")
    if requested and not model_matches(info, requested):
        raise ModelNotFoundError(
            f"The model '{requested}' is not loaded here. This server serves '{info.id}'; "
            "see GET /v1/models."
        )
    return info


def model_matches(info: ModelInfo, requested: str) -> bool:
    """Accept the id, the file name, the path, and Ollama-style ``id:latest``."""
    name = requested.removesuffix(":latest")
    return name in (info.id, info.path.name, str(info.path))


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
