"""OpenAI-compatible routes: /v1/models, /v1/chat/completions, /v1/completions."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse

from hearth.core.errors import HearthError, InvalidRequestError
from hearth.core.generation import (
    Finished,
    FinishReason,
    GenerationRequest,
    TextDelta,
    ToolCall,
    ToolSpec,
)
from hearth.core.model_info import ModelInfo
from hearth.engine.engine import Engine, GenerationStream
from hearth.engine.grammar import JSON_OBJECT_GRAMMAR, grammar_for_schema
from hearth.engine.tool_calls import ToolCallFilter, ToolFormat, call_grammar, parse_output
from hearth.server.common import collect, in_flight
from hearth.server.errors import api_error_for, error_body
from hearth.server.model_manager import ModelManager
from hearth.server.openai_format import (
    ChunkWriter,
    catalog_model_json,
    completion_json,
    embeddings_json,
    model_json,
    sse,
)
from hearth.server.openai_logprobs import logprobs_json
from hearth.server.openai_schemas import (
    ChatCompletionRequest,
    CompletionRequest,
    EmbeddingRequest,
    SamplingFields,
)
from hearth.server.openapi import json_body
from hearth.server.request_body import parse_body

log = logging.getLogger(__name__)

COMPLETIONS_DEFAULT_MAX_TOKENS = 16  # the OpenAI default for legacy completions
_DISCONNECT_POLL_S = 0.25

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def openai_router(engine: Engine, models: ModelManager) -> APIRouter:
    router = APIRouter()

    @router.get("/v1/models")
    async def list_models() -> dict[str, Any]:
        info = engine.info
        loaded = [model_json(info)] if info else []
        return {
            "object": "list",
            "data": loaded + [catalog_model_json(e) for e in models.available()],
        }

    @router.get("/v1/models/{model_id:path}")
    async def get_model(model_id: str) -> dict[str, Any]:
        found = models.lookup(model_id)
        return model_json(found) if isinstance(found, ModelInfo) else catalog_model_json(found)

    @router.post(
        "/v1/chat/completions", response_model=None, openapi_extra=json_body(ChatCompletionRequest)
    )
    @in_flight(models, engine)
    async def chat_completions(request: Request) -> JSONResponse | StreamingResponse:
        body = await parse_body(request, ChatCompletionRequest)
        info = await models.resolve(body.model)
        tools = body.tool_specs()
        tool_format = engine.tool_format if tools else None
        prompt = engine.render_chat(body.chat_messages(), tools)
        grammar = forced_call_grammar(body, tools, tool_format) or grammar_for(body)
        params = body.to_sampling(
            default_max_tokens=None, grammar=grammar, logprobs=body.logprob_count(chat=True)
        )
        stream = await engine.start(GenerationRequest(prompt=prompt, params=params))
        return await _respond(request, stream, body, info, chat=True, tool_format=tool_format)

    @router.post("/v1/completions", response_model=None, openapi_extra=json_body(CompletionRequest))
    @in_flight(models, engine)
    async def completions(request: Request) -> JSONResponse | StreamingResponse:
        body = await parse_body(request, CompletionRequest)
        info = await models.resolve(body.model)
        params = body.to_sampling(
            default_max_tokens=COMPLETIONS_DEFAULT_MAX_TOKENS,
            grammar=grammar_for(body),
            logprobs=body.logprob_count(chat=False),
        )
        if body.suffix is not None:
            text = body.prompt if isinstance(body.prompt, str) else "".join(map(str, body.prompt))
            gen = GenerationRequest(
                prompt_tokens=tuple(engine.fim_prompt(text, body.suffix)), params=params
            )
        elif isinstance(body.prompt, list) and body.prompt and isinstance(body.prompt[0], int):
            gen = GenerationRequest(prompt_tokens=tuple(int(t) for t in body.prompt), params=params)
        else:
            text = (
                body.prompt
                if isinstance(body.prompt, str)
                else str(body.prompt[0] if body.prompt else "")
            )
            gen = GenerationRequest(prompt=text, params=params)
        stream = await engine.start(gen)
        return await _respond(request, stream, body, info, chat=False, echo=_echo_text(body))

    @router.post("/v1/embeddings", openapi_extra=json_body(EmbeddingRequest))
    @in_flight(models)
    async def embeddings(request: Request) -> dict[str, Any]:
        body = await parse_body(request, EmbeddingRequest)
        info = await models.resolve(body.model)
        try:
            texts = body.texts()
        except ValueError as exc:
            raise InvalidRequestError(str(exc), param="input") from None
        result = await engine.embed(texts)
        return embeddings_json(result, info.id, body.encoding_format, body.dimensions)

    return router


def forced_call_grammar(
    body: ChatCompletionRequest, tools: list[ToolSpec], fmt: ToolFormat | None
) -> str | None:
    """tool_choice "required" or a named function: a grammar makes the model call it."""
    choice = body.tool_choice
    if not tools or fmt is None or choice in (None, "auto", "none"):
        return None
    if choice == "required":
        return call_grammar(tools, fmt)
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        if isinstance(name, str):
            return call_grammar(tools, fmt, only=name)
    raise InvalidRequestError(f"Unsupported tool_choice: {choice!r}", param="tool_choice")


def grammar_for(body: SamplingFields) -> str | None:
    """OpenAI's response_format as a GBNF grammar (None for plain text)."""
    fmt = body.response_format
    if fmt is None or fmt.type == "text":
        return None
    schema = fmt.resolved_schema()
    if fmt.type == "json_schema" and schema is None:
        raise InvalidRequestError(
            "response_format json_schema needs a 'json_schema.schema'.",
            param="response_format",
        )
    return grammar_for_schema(schema) if schema is not None else JSON_OBJECT_GRAMMAR


def _echo_text(body: CompletionRequest) -> str:
    if body.echo and isinstance(body.prompt, str):
        return body.prompt
    return ""


async def _respond(
    request: Request,
    stream: GenerationStream,
    body: SamplingFields,
    info: ModelInfo,
    *,
    chat: bool,
    echo: str = "",
    tool_format: ToolFormat | None = None,
) -> JSONResponse | StreamingResponse:
    if body.stream:
        writer = ChunkWriter(chat=chat, model=info.id)
        tool_filter = ToolCallFilter(tool_format) if tool_format else None
        return StreamingResponse(
            _stream_events(stream, writer, body.include_usage(), echo, tool_filter),
            media_type="text/event-stream",
            headers=SSE_HEADERS,
        )
    collected = await collect(request, stream)
    text, finished = collected.text, collected.finished
    if finished.reason is FinishReason.ERROR:
        return JSONResponse(
            error_body(finished.error or "Generation failed.", "server_error", "engine_failed"),
            status_code=500,
        )
    calls: list[ToolCall] = []
    if tool_format is not None:
        parsed = parse_output(text, tool_format)
        text, calls = parsed.content, parsed.calls
    return JSONResponse(
        completion_json(
            chat=chat,
            model=info.id,
            text=echo + text,
            finished=finished,
            tool_calls=calls,
            logprobs=logprobs_json(collected.logprobs, chat=chat, start_offset=len(echo))
            if body.logprob_count(chat) is not None
            else None,
        )
    )


async def _stream_events(
    stream: GenerationStream,
    writer: ChunkWriter,
    include_usage: bool,
    echo: str,
    tool_filter: ToolCallFilter | None = None,
) -> AsyncIterator[bytes]:
    try:
        opening = writer.opening()
        if opening is not None:
            yield sse(opening)
        if echo:
            yield sse(writer.delta(echo))
        async for event in stream:
            if isinstance(event, TextDelta):
                text = tool_filter.feed(event.text) if tool_filter else event.text
                if text or event.logprobs:
                    yield sse(writer.delta(text, event.logprobs))
            elif isinstance(event, Finished):
                if event.reason is FinishReason.ERROR:
                    yield sse(
                        error_body(
                            event.error or "Generation failed.", "server_error", "engine_failed"
                        )
                    )
                else:
                    calls = []
                    if tool_filter is not None:
                        parsed = tool_filter.finish()
                        if parsed.content:
                            yield sse(writer.delta(parsed.content))
                        calls = parsed.calls
                        if calls:
                            yield sse(writer.tool_calls(calls))
                    yield sse(writer.closing(event, "tool_calls" if calls else None))
                    if include_usage:
                        yield sse(writer.usage_only(event))
        yield sse("[DONE]")
    except HearthError as exc:
        error = api_error_for(exc)
        yield sse(error_body(error.message, error.type, error.code, error.param))
        yield sse("[DONE]")
    finally:
        stream.cancel()
