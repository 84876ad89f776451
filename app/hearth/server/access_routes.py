"""``POST /hearth/v1/access``: the app's endpoint, opened, moved and closed live.

Turning the endpoint on or off, changing its port or its key rule, and creating or
revoking keys take effect without reloading the model: the worker keeps its private
listener for the app and opens or closes a second one for other programs
(``listeners.EndpointListener``), judged by its own policy (``security.AccessControl``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from hearth.config.launch import DEFAULT_PORT, LAN_HOST, LOOPBACK_HOST
from hearth.core.errors import HearthError
from hearth.server.listeners import EndpointListener
from hearth.server.security import AccessControl, AccessPolicy


class AccessChange(BaseModel):
    """``POST /hearth/v1/access``: the app's endpoint switch, its port and key rule."""

    model_config = ConfigDict(extra="forbid")

    endpoint_open: bool
    require_key: bool
    port: int = Field(default=DEFAULT_PORT, ge=0, le=65535)
    lan: bool = False  # every interface (a key is then always required), else loopback


class AccessState(BaseModel):
    endpoint_open: bool
    key_required: bool
    user_keys: int
    port: int | None = None  # where the endpoint listens; None while it is closed


AccessFactory = Callable[[bool, bool | None, bool], AccessPolicy]
"""(endpoint open, require a key, loopback) -> a fresh policy; keys re-read."""


def _error(status: int, message: str, code: str) -> JSONResponse:
    body = {"error": {"message": message, "type": "server_error" if status >= 500
                      else "invalid_request_error", "param": None, "code": code}}  # fmt: skip
    return JSONResponse(body, status_code=status)


def access_router(
    control: AccessControl, access_for: AccessFactory, listener: EndpointListener
) -> APIRouter:
    """Opens, moves and closes the app's endpoint while the worker runs: the loaded
    model stays, and the request log goes on.

    Only the app's per-launch token reaches it (``/hearth/*``). Keys are re-read from
    the store here; if that fails the endpoint stays closed (fail closed) and the
    caller gets the reason, so the app can show it.
    """
    router = APIRouter()

    async def closed() -> AccessState:
        control.set_endpoint(None)
        await listener.close()
        return AccessState(endpoint_open=False, key_required=False, user_keys=0)

    @router.post("/hearth/v1/access", response_model=AccessState)
    async def change_access(change: AccessChange) -> AccessState | JSONResponse:
        if not change.endpoint_open:
            return await closed()
        try:
            policy = await asyncio.to_thread(access_for, True, change.require_key, not change.lan)
        except HearthError as exc:
            await closed()
            return _error(503, exc.message, exc.code)
        if change.lan and not policy.user_keys:
            await closed()
            return _error(
                400,
                "Serving on the network needs an API key: create one first.",
                "api_key_required",
            )
        control.set_endpoint(policy)
        host = LAN_HOST if change.lan else LOOPBACK_HOST
        try:
            _, port = await listener.open(host, change.port)
        except OSError as exc:
            await closed()
            return _error(
                409,
                f"Can't listen on port {change.port}: {exc.strerror or exc}. Another program "
                "may be using it; choose another port.",
                "address_in_use",
            )
        return AccessState(
            endpoint_open=True,
            key_required=policy.key_required,
            user_keys=len(policy.user_keys),
            port=port,
        )

    return router
