"""Errors in the OpenAI wire shape: ``{"error": {"message", "type", "param", "code"}}``."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hearth.core.errors import (
    ContextOverflowError,
    EngineFailedError,
    HearthError,
    InvalidRequestError,
    ModelLoadError,
    ModelNotFoundError,
    ModelNotLoadedError,
    QueueFullError,
)
from hearth.server.remote.errors import RemoteEngineError

log = logging.getLogger(__name__)


class ApiError(Exception):
    """An error raised inside the HTTP layer itself (auth, body parsing, limits)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type_: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type_
        self.code = code
        self.param = param
        self.headers = headers


def error_body(
    message: str, type_: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


# Anthropic's error type for each HTTP status it uses.
ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    529: "overloaded_error",
}


def anthropic_error_json(status: int, message: str) -> dict[str, Any]:
    """Anthropic's ``{"type": "error", "error": {"type", "message"}}``, typed by status."""
    fallback = "api_error" if status >= 500 else "invalid_request_error"
    error_type = ANTHROPIC_ERROR_TYPES.get(status, fallback)
    return {"type": "error", "error": {"type": error_type, "message": message}}


def api_error_for(exc: HearthError) -> ApiError:
    """Map an engine/core error to an HTTP status and OpenAI error type."""
    if isinstance(exc, ContextOverflowError):
        return ApiError(400, exc.message, code=exc.code, param=exc.param)
    if isinstance(exc, InvalidRequestError):
        return ApiError(400, exc.message, code=exc.code, param=exc.param)
    if isinstance(exc, ModelNotFoundError):
        return ApiError(404, exc.message, code=exc.code, param="model")
    if isinstance(exc, QueueFullError):
        return ApiError(
            503,
            exc.message,
            type_="server_error",
            code=exc.code,
            headers={"Retry-After": str(exc.retry_after_s)},
        )
    if isinstance(exc, RemoteEngineError):  # the engine behind Hearth failed: Bad Gateway
        return ApiError(502, exc.message, type_="server_error", code=exc.code)
    if isinstance(exc, ModelNotLoadedError | ModelLoadError):
        return ApiError(503, exc.message, type_="server_error", code=exc.code)
    if isinstance(exc, EngineFailedError):
        return ApiError(500, exc.message, type_="server_error", code=exc.code)
    return ApiError(500, exc.message, type_="server_error", code=exc.code)


OLLAMA_PREFIX = "/api/"
ANTHROPIC_PREFIX = "/v1/messages"


def dialect_error_json(error: ApiError, path: str = "") -> dict[str, Any]:
    """OpenAI's error shape, Ollama's plain ``{"error": "..."}`` under /api/, or
    Anthropic's ``{"type": "error", "error": {...}}`` under /v1/messages: each client
    reads its own dialect's shape, whichever layer refused the request."""
    if path.startswith(OLLAMA_PREFIX):
        return {"error": error.message}
    if path.startswith(ANTHROPIC_PREFIX):
        return anthropic_error_json(error.status, error.message)
    return error_body(error.message, error.type, error.code, error.param)


def json_error(error: ApiError, path: str = "") -> JSONResponse:
    """The error in the dialect of ``path`` (:func:`dialect_error_json`)."""
    body = dialect_error_json(error, path)
    return JSONResponse(body, status_code=error.status, headers=error.headers)


def install_error_handlers(app: FastAPI) -> None:
    """Every failure leaves as OpenAI-shaped JSON; never a traceback."""

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return json_error(exc, request.url.path)

    @app.exception_handler(HearthError)
    async def _hearth_error(request: Request, exc: HearthError) -> JSONResponse:
        return json_error(api_error_for(exc), request.url.path)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return json_error(validation_error(exc.errors()), request.url.path)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        type_ = "invalid_request_error" if exc.status_code < 500 else "server_error"
        code = "not_found" if exc.status_code == 404 else None
        error = ApiError(exc.status_code, str(exc.detail), type_=type_, code=code)
        return json_error(error, request.url.path)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        return _internal_error(exc, request.url.path)

    app.add_middleware(UnexpectedErrorMiddleware)  # innermost of the middleware


def _internal_error(exc: Exception, path: str) -> JSONResponse:
    log.error("unhandled error", exc_info=exc)
    error = ApiError(500, f"Internal error: {type(exc).__name__}", type_="server_error")
    return json_error(error, path)


class UnexpectedErrorMiddleware:
    """An unexpected exception before the response starts becomes the logged 500, and the
    keep-alive connection stays usable. (Starlette's outermost handler re-raises after
    answering, and uvicorn then closes the connection: the client's next request on it
    was reset.) Once a response has started, the exception goes on up as before."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            if started:
                raise
            await _internal_error(exc, scope["path"])(scope, receive, send)


def validation_error(errors: Any) -> ApiError:
    """Turn pydantic's error list into one readable message naming the parameter."""
    items = list(errors)
    if not items:
        return ApiError(400, "Invalid request.")
    first = items[0]
    loc = [str(part) for part in first.get("loc", ()) if part not in ("body",)]
    param = ".".join(loc) or None
    message = first.get("msg", "Invalid value")
    if first.get("type") == "missing":
        text = f"Missing required parameter: '{param}'."
    else:
        text = f"Invalid value for '{param}': {message}." if param else f"{message}."
    return ApiError(400, text, param=param, code="invalid_value")
