"""Reading request bodies with a size limit and turning bad JSON into clean 400s.

Every dialect's routes parse through ``parse_body``, so the checks in ``body_guard``
(NUL characters, lone surrogates, nesting depth, schema limits) apply to all of them.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError

from hearth.server.body_guard import check_schemas, decode_json
from hearth.server.errors import ApiError, validation_error

ModelT = TypeVar("ModelT", bound=BaseModel)

DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
INLINE_DECODE_BYTES = 256 * 1024
"""Bodies above this are decoded and validated in a worker thread: parsing and checking
tens of megabytes takes long enough to stall every other request on the event loop."""


async def read_json(request: Request, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> Any:
    raw = await _read_raw(request, max_bytes)
    if len(raw) > INLINE_DECODE_BYTES:
        return await asyncio.to_thread(decode_json, raw)
    return decode_json(raw)


async def parse_body(request: Request, model: type[ModelT]) -> ModelT:
    raw = await _read_raw(request, DEFAULT_MAX_BODY_BYTES)
    if len(raw) > INLINE_DECODE_BYTES:
        body, parsed = await asyncio.to_thread(_decode_and_validate, raw, model)
    else:
        body, parsed = _decode_and_validate(raw, model)
    await check_schemas(body, _field_names(model))
    return parsed


async def _read_raw(request: Request, max_bytes: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise _too_large(max_bytes)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise _too_large(max_bytes)
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        raise ApiError(400, "The request body is empty; send a JSON object.", code="invalid_json")
    return raw


def _decode_and_validate(raw: bytes, model: type[ModelT]) -> tuple[dict[str, Any], ModelT]:
    body = decode_json(raw)
    if not isinstance(body, dict):
        raise ApiError(400, "The request body must be a JSON object.", code="invalid_json")
    try:
        return body, model.model_validate(body)
    except ValidationError as exc:
        raise validation_error(exc.errors()) from None


def _field_names(model: type[BaseModel]) -> set[str]:
    fields = model.model_fields
    return set(fields) | {f.alias for f in fields.values() if f.alias}


def _too_large(max_bytes: int) -> ApiError:
    return ApiError(
        413, f"The request body is larger than {max_bytes} bytes.", code="body_too_large"
    )
