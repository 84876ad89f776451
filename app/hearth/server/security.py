"""Who may talk to the worker: the GUI's per-launch token, API keys, local Host names.

Implemented as plain ASGI middleware so that streaming responses and disconnect
detection pass through untouched.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import Enum

from starlette.types import ASGIApp, Receive, Scope, Send

from hearth.server.errors import ApiError, dialect_error_json
from hearth.server.listeners import ENDPOINT_SCOPE_KEY

log = logging.getLogger(__name__)

PUBLIC_PATHS = frozenset({"/health", "/", "/openapi.json"})
LOCAL_HOST_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
ADMIN_PREFIX = "/hearth/"


class Access(str, Enum):
    """What the policy says about one request (each refusal is a 401)."""

    ALLOW = "allow"
    NEED_TOKEN = "need_token"  # an admin route: the app's token only
    ENDPOINT_OFF = "endpoint_off"  # the endpoint is off: the app's token only
    NEED_KEY = "need_key"  # a user API key (or the app's token) is required


@dataclass(frozen=True)
class AccessPolicy:
    """Who may use the worker. The app's token and the user's keys are kept apart.

    - ``admin_token``: the per-launch token the supervisor gives its worker. It opens
      every route; admin routes (``/hearth/*``) accept nothing else. Without one
      (headless ``hearth serve``) admin routes follow the endpoint's own rule.
    - ``endpoint_open`` False: the endpoint is "off", only ``admin_token`` gets in.
    - ``require_key``: clients need one of ``user_keys``. Off loopback a key is always
      needed, whatever ``require_key`` says; with no keys then, nobody gets in.
    """

    admin_token: str | None = None
    user_keys: tuple[str, ...] = ()
    endpoint_open: bool = True
    require_key: bool = False
    loopback_only: bool = True
    allowed_origins: tuple[str, ...] = ()

    @property
    def key_required(self) -> bool:
        return self.require_key or not self.loopback_only

    def decide(self, path: str, presented: str | None) -> Access:
        if presented and self.admin_token and _same(presented, self.admin_token):
            return Access.ALLOW
        if self.admin_token and path.startswith(ADMIN_PREFIX):
            return Access.NEED_TOKEN
        if not self.endpoint_open:
            return Access.ENDPOINT_OFF
        if not self.key_required:
            return Access.ALLOW
        if presented and any(_same(presented, key) for key in self.user_keys):
            return Access.ALLOW
        return Access.NEED_KEY

    def accepts(self, presented: str | None, path: str = "/v1/models") -> bool:
        return self.decide(path, presented) is Access.ALLOW


def _same(presented: str, secret: str) -> bool:
    return hmac.compare_digest(presented.encode(), secret.encode())


class AccessControl:
    """The worker's current policy; the one place that replaces it while serving.

    Owned by the app; the middleware reads ``policy`` per request and the admin access
    route swaps it, so keys and the endpoint switch change without a restart. Swapping
    a frozen value is atomic under the event loop: a request sees the old or the new.
    """

    def __init__(self, policy: AccessPolicy) -> None:
        self._policy = policy
        self._endpoint: AccessPolicy | None = None

    @property
    def policy(self) -> AccessPolicy:
        return self._policy

    @property
    def endpoint_policy(self) -> AccessPolicy | None:
        """The policy of the app's endpoint listener (``listeners.EndpointListener``),
        None while it is closed."""
        return self._endpoint

    def policy_for(self, scope: Scope) -> AccessPolicy:
        """The policy for a request, by the listener it came in through."""
        if not scope.get(ENDPOINT_SCOPE_KEY):
            return self._policy
        if self._endpoint is None:  # closed while the request was on its way
            return replace(self._policy, endpoint_open=False)
        return self._endpoint

    def set_user_keys(self, keys: tuple[str, ...]) -> None:
        """The user's keys changed in the store (``key_refresh``): both listeners' policies
        take the new set; whether a key is required stays as it was, so revoking the last
        key locks the endpoint instead of opening it."""
        self._policy = replace(self._policy, user_keys=keys)
        if self._endpoint is not None:
            self._endpoint = replace(self._endpoint, user_keys=keys)

    def set_endpoint(self, policy: AccessPolicy | None) -> None:
        self._endpoint = (
            None
            if policy is None
            else replace(policy, allowed_origins=self._policy.allowed_origins)
        )
        if policy is not None:
            log.info(
                "endpoint policy: key %s, %d user keys, %s",
                "required" if policy.key_required else "not required",
                len(policy.user_keys),
                "loopback" if policy.loopback_only else "network",
            )


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
    def __init__(self, app: ASGIApp, control: AccessControl) -> None:
        self.app = app
        self.control = control

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = scope.get("headers", [])
        policy = self.control.policy_for(scope)
        if policy.loopback_only and not host_is_local(headers):
            await _reject(
                send, 403, "Requests must use a local host name (localhost).", "forbidden_host"
            )
            return
        origin = header(headers, b"origin")
        if origin is not None and origin not in policy.allowed_origins:
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
        path = str(scope.get("path", ""))
        public = path in PUBLIC_PATHS or scope.get("method") == "OPTIONS"
        decision = Access.ALLOW if public else policy.decide(path, bearer_token(headers))
        if decision is not Access.ALLOW:
            log.info("rejected request without a valid key to %s (%s)", path, decision.value)
            message = _REFUSALS[decision]
            await _reject(send, 401, message, "invalid_api_key", path)
            return
        await self.app(scope, receive, send)


_REFUSALS = {
    Access.NEED_TOKEN: "This route is for the Hearth app that started this server.",
    Access.ENDPOINT_OFF: "The endpoint is off: turn it on in Hearth's Server panel.",
    Access.NEED_KEY: "Missing or invalid API key. Send it as 'Authorization: Bearer <key>'.",
}


async def _reject(send: Send, status: int, message: str, code: str, path: str = "") -> None:
    error = ApiError(status, message, code=code)
    body = json.dumps(dialect_error_json(error, path)).encode()
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
