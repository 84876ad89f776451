"""Anthropic Messages: ``POST /v1/messages`` and ``/v1/messages/count_tokens``.

For agents that speak Anthropic's API (Claude Code and others). A decoder (the body to
a ``PipelineRequest``) and an encoder (pipeline events to a message or its SSE events);
the generation itself is the shared pipeline's. Errors take Anthropic's shape (see
errors.json_error); ``x-api-key`` is accepted as the key (see security.bearer_token).
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse

from hearth.core.errors import ContextOverflowError
from hearth.server.anthropic_format import (
    StreamWriter,
    message_json,
    new_message_id,
    overflow_message,
)
from hearth.server.anthropic_schemas import CountTokensRequest, MessagesRequest, ToolChoiceIn
from hearth.server.common import in_flight, request_id
from hearth.server.errors import ApiError
from hearth.server.openapi import json_body
from hearth.server.pipeline import ChatPrompt, Pipeline, PipelineRequest, ToolChoice
from hearth.server.request_body import parse_body

log = logging.getLogger(__name__)

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def anthropic_router(pipeline: Pipeline) -> APIRouter:
    router = APIRouter()
    models = pipeline.models

    @router.post("/v1/messages", response_model=None, openapi_extra=json_body(MessagesRequest))
    @in_flight(models)
    async def messages(request: Request) -> JSONResponse | StreamingResponse:
        body = await parse_body(request, MessagesRequest)
        prompt = _prompt(body)
        pipeline_request = PipelineRequest(
            body.model, prompt, body.to_sampling(), request_id=request_id(request)
        )
        try:
            generation = await pipeline.start(pipeline_request)
        except ContextOverflowError as exc:
            raise ApiError(400, overflow_message(exc), code=exc.code) from None
        message_id = new_message_id()
        if body.stream:
            writer = StreamWriter(message_id, body.model, generation.prompt_tokens)
            return StreamingResponse(
                generation.encode(writer), media_type="text/event-stream", headers=SSE_HEADERS
            )
        result = await generation.collect(request.is_disconnected)
        return JSONResponse(
            message_json(
                message_id,
                body.model,
                result.text,
                result.calls,
                result.finished,
                reasoning=result.reasoning,
            )
        )

    @router.post("/v1/messages/count_tokens", openapi_extra=json_body(CountTokensRequest))
    @in_flight(models)
    async def count_tokens(request: Request) -> dict[str, int]:
        body = await parse_body(request, CountTokensRequest)
        # The fields the client sent, for an engine that counts in Anthropic's form.
        sent = body.model_dump(mode="json", by_alias=True, exclude_unset=True)
        count = await pipeline.count_tokens(body.model, _prompt(body), sent)
        return {"input_tokens": count}

    return router


def _prompt(body: CountTokensRequest) -> ChatPrompt:
    tools = tuple(body.tool_specs())
    return ChatPrompt(
        tuple(body.chat_messages()), tools, tool_choice(body.tool_choice), body.template_kwargs()
    )


def tool_choice(choice: ToolChoiceIn | None) -> ToolChoice:
    """auto, any (some tool must be called), tool (this one), none."""
    if choice is None or choice.type == "auto":
        return ToolChoice()
    if choice.type == "any":
        return ToolChoice("required")
    if choice.type == "none":
        return ToolChoice("none")
    if not choice.name:
        raise ApiError(400, "tool_choice of type 'tool' needs a 'name'.", param="tool_choice")
    return ToolChoice("named", choice.name)
