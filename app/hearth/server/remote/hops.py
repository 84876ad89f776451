"""One hop only: a Hearth that another Hearth calls as its engine serves its own models.

Engines may be other Hearths, and a Hearth may (by mistake) list itself, or two may
list each other. Without a guard, listing models or routing a request would bounce
between them until every timeout expired. Hearth marks what it sends to an engine with
:data:`HOP_HEADER`; a request that arrives so marked sees no remote engines: its
models list holds only local models, and ``engine/model`` is not routed on.
"""

from __future__ import annotations

from contextvars import ContextVar

from starlette.types import ASGIApp, Receive, Scope, Send

HOP_HEADER = "X-Hearth-Gateway"
_HOP_KEY = HOP_HEADER.lower().encode()
_via_gateway: ContextVar[bool] = ContextVar("hearth_via_gateway", default=False)


def via_gateway() -> bool:
    """Whether the request being handled was sent by another Hearth."""
    return _via_gateway.get()


class GatewayHopMiddleware:
    """Notes, for the request's own context, whether another Hearth sent it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        marked = any(key == _HOP_KEY for key, _ in scope.get("headers", ()))
        token = _via_gateway.set(marked)
        try:
            await self.app(scope, receive, send)
        finally:
            _via_gateway.reset(token)
