"""Reading request bodies with a size limit and turning bad JSON into clean 400s."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError

from hearth.server.errors import ApiError, validation_error

ModelT = TypeVar("ModelT", bound=BaseModel)

DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024


async def read_json(request: Request, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> Any:
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
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApiError(
            400, f"The request body is not valid JSON: {exc}", code="invalid_json"
        ) from None


async def parse_body(request: Request, model: type[ModelT]) -> ModelT:
    body = await read_json(request)
    if not isinstance(body, dict):
        raise ApiError(400, "The request body must be a JSON object.", code="invalid_json")
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise validation_error(exc.errors()) from None


def _too_large(max_bytes: int) -> ApiError:
    return ApiError(
        413, f"The request body is larger than {max_bytes} bytes.", code="body_too_large"
    )
