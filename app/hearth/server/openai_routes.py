"""OpenAI-compatible routes: /v1/models, /v1/chat/completions, /v1/completions.

Each generation route is a decoder (JSON to a ``PipelineRequest``) and an encoder
(pipeline events to a response object or SSE chunks); the generation is the pipeline's.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse

from hearth.core.errors import InvalidRequestError
from hearth.server.catalog import CatalogEntry
from hearth.server.common import in_flight, request_id
from hearth.server.generation import Generation
from hearth.server.openai_format import (
    ChunkWriter,
    SseStream,
    catalog_model_json,
    completion_json,
    embeddings_json,
    model_json,
)
from hearth.server.openai_logprobs import logprobs_json
from hearth.server.openai_schemas import (
    ChatCompletionRequest,
    CompletionRequest,
    EmbeddingRequest,
    SamplingFields,
)
from hearth.server.openapi import json_body
from hearth.server.pipeline import (
    ChatPrompt,
    FillInMiddle,
    OutputFormat,
    Pipeline,
    PipelineRequest,
    TextPrompt,
    TokenPrompt,
    ToolChoice,
)
from hearth.server.remote.listing import openai_model, openai_models
from hearth.server.request_body import parse_body

log = logging.getLogger(__name__)

COMPLETIONS_DEFAULT_MAX_TOKENS = 16  # the OpenAI default for legacy completions

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def openai_router(pipeline: Pipeline) -> APIRouter:
    router = APIRouter()
    models = pipeline.models

    @router.get("/v1/models")
    async def list_models() -> dict[str, Any]:
        loaded = [  # the most recently used first
            model_json(r.info, r.engine.loaded_traits) for r in reversed(models.residents())
        ]
        return {
            "object": "list",
            "data": loaded
            + [catalog_model_json(e) for e in models.available()]
            + await openai_models(pipeline.remote),
        }

    @router.get("/v1/models/{model_id:path}")
    async def get_model(model_id: str) -> dict[str, Any]:
        remote = await openai_model(pipeline.remote, model_id)
        if remote is not None:
            return remote
        found = models.lookup(model_id)
        if isinstance(found, CatalogEntry):
            return catalog_model_json(found)
        return model_json(found.info, found.engine.loaded_traits)

    @router.post(
        "/v1/chat/completions", response_model=None, openapi_extra=json_body(ChatCompletionRequest)
    )
    @in_flight(models)
    async def chat_completions(request: Request) -> JSONResponse | StreamingResponse:
        body = await parse_body(request, ChatCompletionRequest)
        tools = tuple(body.tool_specs())
        choice = tool_choice(body) if tools else ToolChoice()
        prompt = ChatPrompt(tuple(body.chat_messages()), tools, choice, body.template_kwargs())
        params = body.to_sampling(default_max_tokens=None, logprobs=body.logprob_count(chat=True))
        pipeline_request = PipelineRequest(
            body.model, prompt, params, output_format(body), request_id(request), body.ttl
        )
        generation = await pipeline.start(pipeline_request)
        return await _respond(request, generation, body, chat=True)

    @router.post("/v1/completions", response_model=None, openapi_extra=json_body(CompletionRequest))
    @in_flight(models)
    async def completions(request: Request) -> JSONResponse | StreamingResponse:
        body = await parse_body(request, CompletionRequest)
        params = body.to_sampling(
            default_max_tokens=COMPLETIONS_DEFAULT_MAX_TOKENS,
            logprobs=body.logprob_count(chat=False),
        )
        generation = await pipeline.start(
            PipelineRequest(
                body.model,
                _completion_prompt(body),
                params,
                output_format(body),
                request_id(request),
                keep_alive=body.ttl,
            )
        )
        return await _respond(request, generation, body, chat=False, echo=_echo_text(body))

    @router.post("/v1/embeddings", openapi_extra=json_body(EmbeddingRequest))
    @in_flight(models)
    async def embeddings(request: Request) -> dict[str, Any]:
        body = await parse_body(request, EmbeddingRequest)
        resident = await models.use(
            body.model, keep_alive=body.ttl, request_id=request_id(request)
        )
        try:
            texts = body.texts()
        except ValueError as exc:
            raise InvalidRequestError(str(exc), param="input") from None
        result = await resident.engine.embed(texts)
        return embeddings_json(result, resident.info.id, body.encoding_format, body.dimensions)

    return router


def tool_choice(body: ChatCompletionRequest) -> ToolChoice:
    """OpenAI's tool_choice: "auto", "none", "required" or a named function."""
    choice = body.tool_choice
    function = choice.get("function") if isinstance(choice, dict) else None
    return ToolChoice.parse(choice, function.get("name") if isinstance(function, dict) else None)


def output_format(body: SamplingFields) -> OutputFormat:
    """OpenAI's response_format."""
    fmt = body.response_format
    if fmt is None or fmt.type == "text":
        return OutputFormat()
    schema = fmt.resolved_schema()
    if fmt.type == "json_schema" and schema is None:
        raise InvalidRequestError(
            "response_format json_schema needs a 'json_schema.schema'.",
            param="response_format",
        )
    return OutputFormat("json_schema", schema) if schema is not None else OutputFormat("json")


def _completion_prompt(body: CompletionRequest) -> TextPrompt | TokenPrompt | FillInMiddle:
    if body.suffix is not None:
        text = body.prompt if isinstance(body.prompt, str) else "".join(map(str, body.prompt))
        return FillInMiddle(text, body.suffix)
    if isinstance(body.prompt, list) and body.prompt and isinstance(body.prompt[0], int):
        return TokenPrompt(tuple(int(t) for t in body.prompt))
    if isinstance(body.prompt, str):
        return TextPrompt(body.prompt)
    return TextPrompt(str(body.prompt[0] if body.prompt else ""))


def _echo_text(body: CompletionRequest) -> str:
    if body.echo and isinstance(body.prompt, str):
        return body.prompt
    return ""


async def _respond(
    request: Request, generation: Generation, body: SamplingFields, *, chat: bool, echo: str = ""
) -> JSONResponse | StreamingResponse:
    if body.stream:
        writer = ChunkWriter(chat=chat, model=generation.info.id)
        encoder = SseStream(writer, include_usage=body.include_usage(), echo=echo)
        return StreamingResponse(
            generation.encode(encoder), media_type="text/event-stream", headers=SSE_HEADERS
        )
    result = await generation.collect(request.is_disconnected)
    return JSONResponse(
        completion_json(
            chat=chat,
            model=generation.info.id,
            text=echo + result.text,
            finished=result.finished,
            tool_calls=list(result.calls),
            reasoning=result.reasoning,
            logprobs=logprobs_json(result.logprobs, chat=chat, start_offset=len(echo))
            if body.logprob_count(chat) is not None
            else None,
        )
    )
