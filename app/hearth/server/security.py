"""Who may talk to the worker: API keys, the GUI's per-launch token, local Host names.

Implemented as plain ASGI middleware so that streaming responses and disconnect
detection pass through untouched.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from hearth.server.anthropic_format import error_json as anthropic_error_json
from hearth.server.errors import ANTHROPIC_PREFIX

log = logging.getLogger(__name__)

PUBLIC_PATHS = frozenset({"/health", "/", "/openapi.json"})
LOCAL_HOST_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


@dataclass(frozen=True)
class AccessPolicy:
    """``keys`` empty means no authentication (only ever allowed on loopback)."""

    keys: tuple[str, ...] = ()
    loopback_only: bool = True
    allowed_origins: tuple[str, ...] = ()

    def accepts(self, presented: str | None) -> bool:
        if not self.keys:
            return True
        if not presented:
            return False
        return any(hmac.compare_digest(presented.encode(), key.encode()) for key in self.keys)


def bearer_token(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    for name, value in headers:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
        elif name == b"x-api-key":
            return value.decode("latin-1").strip() or None
    return None


def header(headers: Iterable[tuple[bytes, bytes]], wanted: bytes) -> str | None:
    for name, value in headers:
        if name == wanted:
            return value.decode("latin-1")
    return None


def host_is_local(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """Defends against DNS rebinding: a browser page must not reach us by another name."""
    for name, value in headers:
        if name == b"host":
            host = value.decode("latin-1").strip().lower()
            bracketed = host.startswith("[")
            host = host[: host.find("]") + 1] if bracketed else host.rsplit(":", 1)[0]
            return host in LOCAL_HOST_NAMES or host.endswith(".localhost")
    return True  # HTTP/1.0 clients may omit Host; they cannot be a rebinding browser


class AccessMiddleware:
    def __init__(self, app: ASGIApp, policy: AccessPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = scope.get("headers", [])
        if self.policy.loopback_only and not host_is_local(headers):
            await _reject(
                send, 403, "Requests must use a local host name (localhost).", "forbidden_host"
            )
            return
        origin = header(headers, b"origin")
        if origin is not None and origin not in self.policy.allowed_origins:
            # Browsers send Origin on cross-site requests, even "simple" no-cors POSTs that
            # skip the CORS preflight; without this a web page could drive the endpoint.
            await _reject(
                send,
                403,
                f"Requests from web pages ({origin}) are not allowed. "
                "Start the server with --cors-origin to allow one.",
                "forbidden_origin",
            )
            return
        public = scope.get("path") in PUBLIC_PATHS or scope.get("method") == "OPTIONS"
        if not public and not self.policy.accepts(bearer_token(headers)):
            log.info("rejected request without a valid key to %s", scope.get("path"))
            await _reject(
                send,
                401,
                "Missing or invalid API key. Send it as 'Authorization: Bearer <key>'.",
                "invalid_api_key",
                str(scope.get("path", "")),
            )
            return
        await self.app(scope, receive, send)


async def _reject(send: Send, status: int, message: str, code: str, path: str = "") -> None:
    error = {"message": message, "type": "invalid_request_error", "param": None, "code": code}
    if path.startswith(ANTHROPIC_PREFIX):  # Anthropic clients read their own error shape
        body = json.dumps(anthropic_error_json(status, message)).encode()
    else:
        body = json.dumps({"error": error}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
