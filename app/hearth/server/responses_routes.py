"""OpenAI Responses: ``POST /v1/responses``, and ``GET``/``DELETE /v1/responses/{id}``.

For agents that speak the Responses API (Codex CLI and others): a decoder (the body to
a ``PipelineRequest``) and an encoder (pipeline events to a response object or typed SSE
events with sequence numbers); the generation itself is the shared pipeline's.

With ``store`` (the default) each finished response is kept with its whole conversation,
so a later request may send only its new items and a ``previous_response_id``. The
stored items render to the same chat as before, and the template renders that turn's
output as it was generated, so the continuation's prompt starts with the previous
prompt and reply, and the engine reuses that slot's cache for them.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse

from hearth.server.common import in_flight, request_id
from hearth.server.errors import ApiError
from hearth.server.openapi import json_body
from hearth.server.pipeline import ChatPrompt, Pipeline, PipelineRequest, ToolChoice
from hearth.server.request_body import parse_body
from hearth.server.response_store import ResponseStore, StoredResponse
from hearth.server.responses_format import ResponseWriter
from hearth.server.responses_schemas import InputItem, ResponsesRequest

log = logging.getLogger(__name__)

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def responses_router(pipeline: Pipeline, store: ResponseStore) -> APIRouter:
    router = APIRouter()
    models = pipeline.models

    @router.post("/v1/responses", response_model=None, openapi_extra=json_body(ResponsesRequest))
    @in_flight(models)
    async def responses(request: Request) -> JSONResponse | StreamingResponse:
        body = await parse_body(request, ResponsesRequest)
        history = await _history(store, body.previous_response_id)
        tools = tuple(body.tool_specs())
        choice = body.choice() if tools else ToolChoice()
        messages = body.chat_messages([InputItem.model_validate(item) for item in history])
        prompt = ChatPrompt(tuple(messages), tools, choice, body.template_kwargs())
        generation = await pipeline.start(
            PipelineRequest(
                body.model, prompt, body.to_sampling(), body.output_format(), request_id(request)
            )
        )
        writer = ResponseWriter(body, body.model or generation.info.id)
        conversation = [*history, *(_item_json(item) for item in body.input_items())]

        async def keep() -> None:
            if body.store and writer.final is not None:
                stored = StoredResponse(writer.id, time.time(), conversation, writer.final)
                await _keep(store, stored)

        if body.stream:
            chunks = _kept_when_final(generation.encode(writer), writer, keep)
            return StreamingResponse(chunks, media_type="text/event-stream", headers=SSE_HEADERS)
        result = await generation.collect(request.is_disconnected)
        response = writer.complete(result.text, result.calls, result.finished, result.reasoning)
        await keep()
        return JSONResponse(response)

    @router.get("/v1/responses/{response_id}")
    async def retrieve(response_id: str) -> JSONResponse:
        return JSONResponse((await _stored(store, response_id)).response)

    @router.delete("/v1/responses/{response_id}")
    async def delete(response_id: str) -> JSONResponse:
        if not await store.delete(response_id):
            raise _not_found(response_id)
        return JSONResponse({"id": response_id, "object": "response.deleted", "deleted": True})

    @router.get("/v1/responses/{response_id}/input_items")
    async def input_items(
        response_id: str,
        limit: int = Query(20, ge=1, le=100),
        order: Literal["asc", "desc"] = "desc",
        after: str | None = None,
    ) -> JSONResponse:
        """The conversation the response was made from (earlier turns included)."""
        items = (await _stored(store, response_id)).input_items
        items = items[::-1] if order == "desc" else items
        if after is not None:
            ids = [item.get("id") for item in items]
            items = items[ids.index(after) + 1 :] if after in ids else []
        page = items[:limit]
        return JSONResponse({
            "object": "list", "data": page, "has_more": len(items) > limit,
            "first_id": page[0].get("id") if page else None,
            "last_id": page[-1].get("id") if page else None,
        })  # fmt: skip

    return router


async def _history(store: ResponseStore, previous_id: str | None) -> list[dict[str, Any]]:
    """The stored conversation a continuation starts from: input and output items."""
    if not previous_id:
        return []
    stored = await store.get(previous_id)
    if stored is None:
        raise ApiError(
            404,
            f"Previous response with id '{previous_id}' not found.",
            param="previous_response_id",
        )
    return stored.conversation()


async def _stored(store: ResponseStore, response_id: str) -> StoredResponse:
    stored = await store.get(response_id)
    if stored is None:
        raise _not_found(response_id)
    return stored


def _not_found(response_id: str) -> ApiError:
    return ApiError(404, f"Response with id '{response_id}' not found.", code="not_found")


def _item_json(item: InputItem) -> dict[str, Any]:
    """An input item as stored (and listed by input_items): with an id of its own."""
    return {"id": f"item_{secrets.token_hex(12)}", **item.model_dump(exclude_none=True)}


async def _keep(store: ResponseStore, stored: StoredResponse) -> None:
    """Store it; a disk error is logged, and the reply still goes out."""
    try:
        await store.put(stored)
    except sqlite3.Error:
        log.exception("could not store response %s", stored.id)


async def _kept_when_final(
    chunks: AsyncIterator[bytes], writer: ResponseWriter, keep: Callable[[], Awaitable[None]]
) -> AsyncIterator[bytes]:
    """The stream, with the response stored before its final event goes out: a client may
    continue from it as soon as it reads ``response.completed``."""
    kept = False
    async with contextlib.aclosing(chunks):  # type: ignore[type-var]
        async for chunk in chunks:
            if not kept and writer.final is not None:
                kept = True
                await keep()
            yield chunk
