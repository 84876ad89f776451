"""Ollama-compatible routes, for the many tools that only speak Ollama.

``/api/chat`` and ``/api/generate`` stream NDJSON by default; errors are
``{"error": "..."}`` (see errors.json_error).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse

from hearth import __version__
from hearth.core.errors import HearthError, InvalidRequestError
from hearth.core.generation import (
    ChatMessage,
    Finished,
    FinishReason,
    GenerationRequest,
    TextDelta,
    ToolCall,
)
from hearth.core.sampling import SamplingParams
from hearth.engine.engine import Engine, GenerationStream
from hearth.engine.grammar import JSON_OBJECT_GRAMMAR, grammar_for_schema
from hearth.engine.tool_calls import ToolCallFilter, ToolFormat, parse_output
from hearth.server.common import collect, in_flight
from hearth.server.model_manager import ModelManager
from hearth.server.ollama_format import (
    OLLAMA_API_VERSION,
    catalog_tag_entry,
    fim_template,
    final_stats,
    ndjson,
    now_iso,
    ollama_name,
    ps_entry,
    show_json,
    tag_entry,
)
from hearth.server.ollama_schemas import (
    OllamaChatRequest,
    OllamaEmbedRequest,
    OllamaGenerateRequest,
    OllamaShowRequest,
    keep_alive_seconds,
)
from hearth.server.openapi import json_body
from hearth.server.request_body import parse_body

log = logging.getLogger(__name__)

ChunkMaker = Callable[[str], dict[str, Any]]
FinalMaker = Callable[[Finished, str], dict[str, Any]]


def ollama_router(engine: Engine, models: ModelManager) -> APIRouter:
    router = APIRouter(prefix="/api")

    @router.get("/version")
    async def version() -> dict[str, str]:
        return {"version": OLLAMA_API_VERSION, "hearth": __version__}

    @router.get("/tags")
    async def tags() -> dict[str, Any]:
        info = engine.info
        loaded = [tag_entry(info)] if info else []
        return {"models": loaded + [catalog_tag_entry(e) for e in models.available()]}

    @router.get("/ps")
    async def ps() -> dict[str, Any]:
        info = engine.info
        return {"models": [ps_entry(info)] if info else []}

    @router.post("/show", openapi_extra=json_body(OllamaShowRequest))
    async def show(request: Request) -> dict[str, Any]:
        body = await parse_body(request, OllamaShowRequest)
        info = await models.resolve(body.requested or None)
        fim = engine.fim_token_texts()
        template = fim_template(*fim) if fim else (info.chat_template or "{{ .Prompt }}")
        return show_json(info, template)

    @router.post("/chat", response_model=None, openapi_extra=json_body(OllamaChatRequest))
    @in_flight(models, engine)
    async def chat(request: Request) -> JSONResponse | StreamingResponse:
        body = await parse_body(request, OllamaChatRequest)
        info = await models.resolve(body.model or None)
        models.keep_alive(keep_alive_seconds(body.keep_alive))
        name = ollama_name(info)
        if not body.messages:
            return JSONResponse(_loaded(name, {"message": {"role": "assistant", "content": ""}}))
        tools = body.tool_specs()
        tool_format = engine.tool_format if tools else None
        prompt = engine.render_chat(body.chat_messages(), tools)
        stream = await engine.start(GenerationRequest(prompt=prompt, params=_sampling(body)))

        def chunk(text: str) -> dict[str, Any]:
            message = {"role": "assistant", "content": text}
            return {"model": name, "created_at": now_iso(), "message": message, "done": False}

        def final(finished: Finished, text: str) -> dict[str, Any]:
            message: dict[str, Any] = {"role": "assistant", "content": text}
            return {"model": name, "created_at": now_iso(), "message": message,
                    **final_stats(finished)}  # fmt: skip

        if tool_format is not None:
            return await _respond_with_tools(
                request, stream, streaming=body.stream, fmt=tool_format, chunk=chunk, final=final
            )
        return await _respond(request, stream, body.stream, chunk, final)

    @router.post("/generate", response_model=None, openapi_extra=json_body(OllamaGenerateRequest))
    @in_flight(models, engine)
    async def generate(request: Request) -> JSONResponse | StreamingResponse:
        body = await parse_body(request, OllamaGenerateRequest)
        info = await models.resolve(body.model or None)
        models.keep_alive(keep_alive_seconds(body.keep_alive))
        name = ollama_name(info)
        params = _sampling(body)
        if body.suffix:
            tokens = tuple(engine.fim_prompt(body.prompt, body.suffix))
            gen = GenerationRequest(prompt_tokens=tokens, params=params)
        elif not body.prompt:
            return JSONResponse(_loaded(name, {"response": ""}))
        elif body.raw:
            gen = GenerationRequest(prompt=body.prompt, params=params)
        else:
            messages = [ChatMessage("system", body.system)] if body.system else []
            messages.append(ChatMessage("user", body.prompt))
            gen = GenerationRequest(prompt=engine.render_chat(messages), params=params)
        stream = await engine.start(gen)

        def chunk(text: str) -> dict[str, Any]:
            return {"model": name, "created_at": now_iso(), "response": text, "done": False}

        def final(finished: Finished, text: str) -> dict[str, Any]:
            return {"model": name, "created_at": now_iso(), "response": text,
                    **final_stats(finished)}  # fmt: skip

        return await _respond(request, stream, body.stream, chunk, final)

    @router.post("/embed", openapi_extra=json_body(OllamaEmbedRequest))
    @in_flight(models)
    async def embed(request: Request) -> dict[str, Any]:
        body = await parse_body(request, OllamaEmbedRequest)
        info = await models.resolve(body.model or None)
        started = time.perf_counter()
        result = await engine.embed(body.texts())
        return {
            "model": ollama_name(info),
            "embeddings": result.vectors,
            "total_duration": int((time.perf_counter() - started) * 1e9),
            "load_duration": 0,
            "prompt_eval_count": result.prompt_tokens,
        }

    @router.post("/embeddings", openapi_extra=json_body(OllamaEmbedRequest))
    @in_flight(models)
    async def embeddings_legacy(request: Request) -> dict[str, Any]:
        body = await parse_body(request, OllamaEmbedRequest)
        await models.resolve(body.model or None)
        result = await engine.embed(body.texts())
        return {"embedding": result.vectors[0]}

    return router


async def _respond_with_tools(
    request: Request,
    stream: GenerationStream,
    *,
    streaming: bool,
    fmt: ToolFormat,
    chunk: ChunkMaker,
    final: FinalMaker,
) -> JSONResponse | StreamingResponse:
    """Like _respond, but tool calls are parsed out of the reply into message.tool_calls."""

    def with_calls(payload: dict[str, Any], calls: list[ToolCall]) -> dict[str, Any]:
        if calls:
            payload["message"]["tool_calls"] = [
                {"function": {"name": c.name, "arguments": json.loads(c.arguments)}} for c in calls
            ]
        return payload

    if not streaming:
        collected = await collect(request, stream)
        text, finished = collected.text, collected.finished
        if finished.reason is FinishReason.ERROR:
            return JSONResponse({"error": finished.error or "Generation failed."}, status_code=500)
        parsed = parse_output(text, fmt)
        return JSONResponse(with_calls(final(finished, parsed.content), parsed.calls))

    async def events() -> AsyncIterator[bytes]:
        tool_filter = ToolCallFilter(fmt)
        try:
            async for event in stream:
                if isinstance(event, TextDelta):
                    text = tool_filter.feed(event.text)
                    if text:
                        yield ndjson(chunk(text))
                elif event.reason is FinishReason.ERROR:
                    yield ndjson({"error": event.error or "Generation failed."})
                else:
                    parsed = tool_filter.finish()
                    if parsed.content:
                        yield ndjson(chunk(parsed.content))
                    if parsed.calls:
                        yield ndjson(with_calls(chunk(""), parsed.calls))
                    yield ndjson(final(event, ""))
        finally:
            stream.cancel()

    return StreamingResponse(events(), media_type="application/x-ndjson")


def _sampling(body: OllamaChatRequest | OllamaGenerateRequest) -> SamplingParams:
    """Options, plus ``format``: "json" or a JSON schema, enforced by a grammar."""
    params = body.options.to_sampling()
    fmt = body.format
    if fmt is None or fmt == "":
        return params
    if fmt == "json":
        return replace(params, grammar=JSON_OBJECT_GRAMMAR)
    if isinstance(fmt, dict):
        return replace(params, grammar=grammar_for_schema(fmt))
    raise InvalidRequestError(f"format must be 'json' or a JSON schema, not {fmt!r}",
                              param="format")  # fmt: skip


def _loaded(name: str, payload: dict[str, Any]) -> dict[str, Any]:
    """What Ollama answers to an empty request: the model is loaded, nothing generated."""
    return {"model": name, "created_at": now_iso(), **payload, "done_reason": "load",
            "done": True}  # fmt: skip


async def _respond(
    request: Request,
    stream: GenerationStream,
    streaming: bool,
    chunk: ChunkMaker,
    final: FinalMaker,
) -> JSONResponse | StreamingResponse:
    if streaming:
        return StreamingResponse(
            _ndjson_events(stream, chunk, final), media_type="application/x-ndjson"
        )
    collected = await collect(request, stream)
    text, finished = collected.text, collected.finished
    if finished.reason is FinishReason.ERROR:
        return JSONResponse({"error": finished.error or "Generation failed."}, status_code=500)
    return JSONResponse(final(finished, text))


async def _ndjson_events(
    stream: GenerationStream, chunk: ChunkMaker, final: FinalMaker
) -> AsyncIterator[bytes]:
    try:
        async for event in stream:
            if isinstance(event, TextDelta):
                yield ndjson(chunk(event.text))
            elif event.reason is FinishReason.ERROR:
                yield ndjson({"error": event.error or "Generation failed."})
            else:
                yield ndjson(final(event, ""))
    except HearthError as exc:
        yield ndjson({"error": exc.message})
    finally:
        stream.cancel()
