"""Reading one generation from an in-process engine, for the engine's tests."""

from __future__ import annotations

from hearth.core.generation import Finished, GenerationRequest, TextDelta, TokenLogprob
from hearth.engine.engine import Engine


async def collect(
    engine: Engine, request: GenerationRequest
) -> tuple[str, Finished, list[TokenLogprob]]:
    """The reply's text, its Finished event and the logprobs its deltas carried."""
    parts: list[str] = []
    logprobs: list[TokenLogprob] = []
    async for event in engine.generate(request):
        if isinstance(event, TextDelta):
            parts.append(event.text)
            logprobs.extend(event.logprobs)
        else:
            return "".join(parts), event, logprobs
    raise AssertionError("no Finished event")


async def run(engine: Engine, request: GenerationRequest) -> tuple[str, Finished]:
    """The reply's text and its Finished event."""
    text, finished, _ = await collect(engine, request)
    return text, finished
