"""llama.cpp's ``POST /infill`` (and ``/v1/infill``): code completion at a cursor.

For editors that speak llama-server's API (llama.vscode, llama.vim): a decoder (the body
to a token prompt laid out with the model's FIM tokens, see infill_prompt) and an
encoder (pipeline events to llama-server's completion JSON or SSE, see infill_format).
The generation is the shared pipeline's. Errors take llama-server's shape on these
routes, which is why they use their own route class.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.routing import APIRoute

from hearth.core.errors import ContextOverflowError, HearthError
from hearth.core.generation import Failed, Finished, TextDelta, TokenLogprob
from hearth.server.common import in_flight, request_id
from hearth.server.errors import ApiError, api_error_for
from hearth.server.generation import Generation
from hearth.server.infill_format import CursorLimits, ResultWriter, error_json, sse
from hearth.server.infill_prompt import infill_tokens
from hearth.server.infill_schemas import InfillRequest
from hearth.server.openapi import json_body
from hearth.server.pipeline import Pipeline, PipelineRequest, TokenPrompt
from hearth.server.request_body import parse_body

log = logging.getLogger(__name__)

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
_DISCONNECT_POLL_S = 0.25
NO_FIM_MESSAGE = (
    "Infill is not supported by this model: it has no fill-in-the-middle tokens. "
    "Load a code model trained for FIM (Qwen2.5-Coder, CodeLlama, StarCoder2, Codestral)."
)


class LlamaErrorRoute(APIRoute):
    """Errors raised in these routes leave in llama-server's shape."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                return await handler(request)
            except ApiError as exc:
                return _error_response(exc)
            except ContextOverflowError as exc:
                body = error_json(api_error_for(exc))
                body["error"].update(
                    type="exceed_context_size_error", n_prompt_tokens=exc.n_prompt, n_ctx=exc.n_ctx
                )
                return JSONResponse(body, status_code=400)
            except HearthError as exc:
                return _error_response(api_error_for(exc))

        return handle


def infill_router(pipeline: Pipeline) -> APIRouter:
    router = APIRouter(route_class=LlamaErrorRoute)
    models = pipeline.models

    async def infill(request: Request) -> Response:
        body = await parse_body(request, InfillRequest)
        resident = await models.use(body.model, request_id=request_id(request), generate=True)
        info, engine = resident.info, resident.engine
        layout = engine.fim_layout()
        if layout is None:
            raise ApiError(501, NO_FIM_MESSAGE, type_="not_supported_error")
        n_predict = body.predict()
        tokens = await asyncio.to_thread(
            infill_tokens,
            layout,
            engine.tokenize_text,
            body.parts(),
            n_ctx=info.n_ctx_per_slot,
            n_predict=n_predict,
        )
        params = body.to_sampling()
        if n_predict == 0:  # a cache warm-up (llama.vim sends these): evaluate, say nothing
            params = replace(params, max_tokens=1)
        generation = await pipeline.start(
            PipelineRequest(
                body.model, TokenPrompt(tuple(tokens)), params, request_id=request_id(request)
            )
        )
        writer = ResultWriter(generation.info.id, generation.prompt_tokens, n_predict)
        limits = CursorLimits(body.n_indent, body.t_max_predict_ms)
        if body.stream:
            return StreamingResponse(
                _stream(generation, writer, limits),
                media_type="text/event-stream",
                headers=SSE_HEADERS,
            )
        run = _Run(generation, limits, quiet=n_predict == 0)
        finished = await _until_disconnected(run.consume(), request.is_disconnected, generation)
        text = "".join(run.parts)
        return JSONResponse(writer.final(text, finished, cut=run.cut, logprobs=tuple(run.logprobs)))

    for path in ("/infill", "/v1/infill"):
        router.add_api_route(
            path,
            in_flight(models)(infill),
            methods=["POST"],
            response_model=None,
            openapi_extra=json_body(InfillRequest),
            name=f"infill{path.replace('/', '_')}",
        )
    return router


class _Run:
    """One infill generation read to its end, with the cursor's stop rules applied."""

    def __init__(self, generation: Generation, limits: CursorLimits, *, quiet: bool) -> None:
        self.generation = generation
        self.limits = limits
        self.quiet = quiet
        self.cut = False
        self.parts: list[str] = []
        self.logprobs: list[TokenLogprob] = []

    def take(self, delta: TextDelta) -> str:
        """The part of ``delta`` to keep; a stop rule that fires cancels the rest."""
        if self.quiet or self.cut:
            return ""
        text, stop = self.limits.feed(delta.text)
        if stop:
            self.cut = True
            self.generation.cancel()  # its Finished (cancelled) still comes, with usage
        return text

    async def consume(self) -> Finished:
        async for event in self.generation.events():
            if isinstance(event, TextDelta):
                self.parts.append(self.take(event))
                self.logprobs.extend(event.logprobs)
            elif isinstance(event, Failed):
                raise event.error
            elif isinstance(event, Finished):
                return event
        raise RuntimeError("generation ended without a Finished event")


async def _stream(
    generation: Generation, writer: ResultWriter, limits: CursorLimits
) -> AsyncIterator[bytes]:
    run = _Run(generation, limits, quiet=writer.n_predict == 0)
    try:
        async for event in generation.events():
            if isinstance(event, TextDelta):
                text = run.take(event)
                if text or (event.logprobs and not run.quiet):
                    yield sse(writer.chunk(text, event.logprobs))
            elif isinstance(event, Failed):
                yield sse(error_json(api_error_for(event.error)))
                return
            elif isinstance(event, Finished):
                yield sse(writer.final("", event, cut=run.cut))
    finally:
        generation.cancel()


async def _until_disconnected(
    work: Coroutine[Any, Any, Finished],
    is_disconnected: Callable[[], Awaitable[bool]],
    generation: Generation,
) -> Finished:
    """Run ``work``; an editor that gives up on a completion (the user typed on) frees
    its slot instead of leaving it to generate for nobody."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=_DISCONNECT_POLL_S)
            if done:
                return task.result()
            if await is_disconnected():
                log.info("client left; cancelling infill %s", generation.request_id)
                generation.cancel()
    finally:
        if not task.done():
            generation.cancel()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def _error_response(error: ApiError) -> JSONResponse:
    return JSONResponse(error_json(error), status_code=error.status, headers=error.headers)
