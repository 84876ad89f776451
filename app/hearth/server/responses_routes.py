"""OpenAI Responses: ``POST /v1/responses``, stateless (the client sends every turn).

For agents that speak the Responses API (Codex CLI and others): a decoder (the body to
a ``PipelineRequest``) and an encoder (pipeline events to a response object or typed SSE
events with sequence numbers); the generation itself is the shared pipeline's.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse

from hearth.server.common import in_flight, request_id
from hearth.server.openapi import json_body
from hearth.server.pipeline import ChatPrompt, Pipeline, PipelineRequest, ToolChoice
from hearth.server.request_body import parse_body
from hearth.server.responses_format import ResponseWriter
from hearth.server.responses_schemas import ResponsesRequest

log = logging.getLogger(__name__)

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def responses_router(pipeline: Pipeline) -> APIRouter:
    router = APIRouter()
    engine, models = pipeline.engine, pipeline.models

    @router.post("/v1/responses", response_model=None, openapi_extra=json_body(ResponsesRequest))
    @in_flight(models, engine)
    async def responses(request: Request) -> JSONResponse | StreamingResponse:
        body = await parse_body(request, ResponsesRequest)
        tools = tuple(body.tool_specs())
        choice = body.choice() if tools else ToolChoice()
        prompt = ChatPrompt(tuple(body.chat_messages()), tools, choice)
        generation = await pipeline.start(
            PipelineRequest(
                body.model, prompt, body.to_sampling(), body.output_format(), request_id(request)
            )
        )
        writer = ResponseWriter(body, body.model or generation.info.id)
        if body.stream:
            return StreamingResponse(
                generation.encode(writer), media_type="text/event-stream", headers=SSE_HEADERS
            )
        result = await generation.collect(request.is_disconnected)
        return JSONResponse(writer.complete(result.text, result.calls, result.finished))

    return router
