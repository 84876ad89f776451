"""Ollama-compatible routes, for the many tools that only speak Ollama.

``/api/chat`` and ``/api/generate`` stream NDJSON by default; errors are
``{"error": "..."}`` (see errors.json_error).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse

from hearth import __version__
from hearth.core.errors import InvalidRequestError
from hearth.core.generation import (
    ChatMessage,
)
from hearth.core.images import IMAGE_MARKER
from hearth.server.common import in_flight, request_id
from hearth.server.generation import Generation
from hearth.server.ollama_format import (
    OLLAMA_API_VERSION,
    ChunkMaker,
    FinalMaker,
    NdjsonStream,
    catalog_tag_entry,
    chat_chunk,
    chat_final,
    fim_template,
    generate_chunk,
    generate_final,
    loaded_json,
    ollama_name,
    ps_entry,
    show_json,
    tag_entry,
    with_thinking,
)
from hearth.server.ollama_schemas import (
    OllamaChatRequest,
    OllamaEmbedRequest,
    OllamaGenerateRequest,
    OllamaShowRequest,
    keep_alive_seconds,
)
from hearth.server.openapi import json_body
from hearth.server.pipeline import (
    ChatPrompt,
    FillInMiddle,
    OutputFormat,
    Pipeline,
    PipelineRequest,
    Prompt,
    TextPrompt,
)
from hearth.server.remote.listing import ollama_show, ollama_tags
from hearth.server.request_body import parse_body

log = logging.getLogger(__name__)


def ollama_router(pipeline: Pipeline) -> APIRouter:
    router = APIRouter(prefix="/api")
    models = pipeline.models

    @router.get("/version")
    async def version() -> dict[str, str]:
        return {"version": OLLAMA_API_VERSION, "hearth": __version__}

    @router.get("/tags")
    async def tags() -> dict[str, Any]:
        loaded = [tag_entry(r.info) for r in reversed(models.residents())]  # newest first
        catalog = [catalog_tag_entry(e) for e in models.available()]
        return {"models": loaded + catalog + await ollama_tags(pipeline.remote)}

    @router.get("/ps")
    async def ps() -> dict[str, Any]:
        return {"models": [ps_entry(m) for m in reversed(models.loaded())]}  # newest first

    @router.post("/show", openapi_extra=json_body(OllamaShowRequest))
    async def show(request: Request) -> dict[str, Any]:
        body = await parse_body(request, OllamaShowRequest)
        remote = await ollama_show(pipeline.remote, body.requested)
        if remote is not None:
            return remote
        resident = await models.use(body.requested or None)
        info, engine = resident.info, resident.engine
        fim = engine.fim_token_texts()
        template = fim_template(*fim) if fim else (info.chat_template or "{{ .Prompt }}")
        return show_json(info, template, engine.loaded_traits)

    @router.post("/chat", response_model=None, openapi_extra=json_body(OllamaChatRequest))
    @in_flight(models)
    async def chat(request: Request) -> JSONResponse | StreamingResponse:
        body = await parse_body(request, OllamaChatRequest)
        keep_alive = keep_alive_seconds(body.keep_alive)
        if not body.messages:
            info = await pipeline.resolve(body.model or None, keep_alive)
            message = {"role": "assistant", "content": ""}
            return JSONResponse(loaded_json(ollama_name(info), {"message": message}))
        prompt = ChatPrompt(
            tuple(body.chat_messages()), tuple(body.tool_specs()),
            template_kwargs=body.template_kwargs(),
        )  # fmt: skip
        generation = await pipeline.start(_request(request, body, prompt, keep_alive))
        return await _respond(request, generation, body.stream, chat_chunk, chat_final)

    @router.post("/generate", response_model=None, openapi_extra=json_body(OllamaGenerateRequest))
    @in_flight(models)
    async def generate(request: Request) -> JSONResponse | StreamingResponse:
        body = await parse_body(request, OllamaGenerateRequest)
        keep_alive = keep_alive_seconds(body.keep_alive)
        prompt: ChatPrompt | TextPrompt | FillInMiddle
        images = body.prompt_images()  # a raw or suffix request with images is refused
        if body.suffix:
            prompt = FillInMiddle(body.prompt, body.suffix)
        elif not body.prompt:
            info = await pipeline.resolve(body.model or None, keep_alive)
            return JSONResponse(loaded_json(ollama_name(info), {"response": ""}))
        elif body.raw:
            prompt = TextPrompt(body.prompt)
        else:
            messages = [ChatMessage("system", body.system)] if body.system else []
            text = IMAGE_MARKER * len(images) + body.prompt  # as Ollama, images first
            messages.append(ChatMessage("user", text, images=images))
            prompt = ChatPrompt(tuple(messages), template_kwargs=body.template_kwargs())
        generation = await pipeline.start(_request(request, body, prompt, keep_alive))
        return await _respond(request, generation, body.stream, generate_chunk, generate_final)

    @router.post("/embed", openapi_extra=json_body(OllamaEmbedRequest))
    @in_flight(models)
    async def embed(request: Request) -> dict[str, Any]:
        body = await parse_body(request, OllamaEmbedRequest)
        resident = await models.use(
            body.model or None, keep_alive=keep_alive_seconds(body.keep_alive),
            request_id=request_id(request),
        )  # fmt: skip
        started = time.perf_counter()
        result = await resident.engine.embed(body.texts())
        return {
            "model": ollama_name(resident.info),
            "embeddings": result.vectors,
            "total_duration": int((time.perf_counter() - started) * 1e9),
            "load_duration": 0,
            "prompt_eval_count": result.prompt_tokens,
        }

    @router.post("/embeddings", openapi_extra=json_body(OllamaEmbedRequest))
    @in_flight(models)
    async def embeddings_legacy(request: Request) -> dict[str, Any]:
        body = await parse_body(request, OllamaEmbedRequest)
        resident = await models.use(
            body.model or None, keep_alive=keep_alive_seconds(body.keep_alive),
            request_id=request_id(request),
        )  # fmt: skip
        result = await resident.engine.embed(body.texts())
        return {"embedding": result.vectors[0]}

    return router


def _request(
    request: Request,
    body: OllamaChatRequest | OllamaGenerateRequest,
    prompt: Prompt,
    keep_alive: float | None,
) -> PipelineRequest:
    return PipelineRequest(
        body.model or None,
        prompt,
        body.options.to_sampling(),
        output_format(body.format),
        request_id(request),
        keep_alive,
    )


def output_format(fmt: str | dict[str, Any] | None) -> OutputFormat:
    """Ollama's ``format``: "json" or a JSON schema."""
    if fmt is None or fmt == "":
        return OutputFormat()
    if fmt == "json":
        return OutputFormat("json")
    if isinstance(fmt, dict):
        return OutputFormat("json_schema", fmt)
    raise InvalidRequestError(f"format must be 'json' or a JSON schema, not {fmt!r}",
                              param="format")  # fmt: skip


async def _respond(
    request: Request,
    generation: Generation,
    streaming: bool,
    chunk: ChunkMaker,
    final: FinalMaker,
) -> JSONResponse | StreamingResponse:
    name = ollama_name(generation.info)
    if streaming:
        return StreamingResponse(
            generation.encode(NdjsonStream(name, chunk, final)), media_type="application/x-ndjson"
        )
    result = await generation.collect(request.is_disconnected)
    reply = final(name, result.finished, result.text, result.calls)
    return JSONResponse(with_thinking(reply, result.reasoning))
