"""Sockets the worker serves on, including the app's endpoint, opened while it runs.

The app's worker always listens privately (loopback, a random port, only the app's
per-launch token gets in). The endpoint other programs use is a second listener on
the port the user chose, opened, moved and closed while the worker runs, so turning
the endpoint on or off never reloads the model. Requests that come in through it are
tagged in the ASGI scope, and the access middleware judges them by the endpoint's own
policy (``security.AccessControl``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator

import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger(__name__)

ENDPOINT_SCOPE_KEY = "hearth.endpoint"
_SHUTDOWN_S = 3


def bind_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(False)
    return sock


class _TagEndpoint:
    """Marks each request as having come through the endpoint listener."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app({**scope, ENDPOINT_SCOPE_KEY: True}, receive, send)


class _ListenerServer(uvicorn.Server):
    """A second uvicorn server in the worker's loop: the first one owns the signals
    and the app's lifespan, so this one touches neither."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class EndpointListener:
    """The app's endpoint: at most one extra listener, owned here."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = _TagEndpoint(app)
        self._server: _ListenerServer | None = None
        self._task: asyncio.Task[None] | None = None
        self.address: tuple[str, int] | None = None

    async def open(self, host: str, port: int) -> tuple[str, int]:
        """Listen on ``host:port`` (moving from any other address); raises OSError when
        the address can't be bound, leaving the endpoint closed."""
        if self.address == (host, port) and self._task is not None and not self._task.done():
            return self.address
        await self.close()
        sock = bind_socket(host, port)  # listening from here: connections queue up
        config = uvicorn.Config(
            self._app,
            lifespan="off",
            log_level="warning",
            access_log=False,
            log_config=None,
            timeout_graceful_shutdown=_SHUTDOWN_S,
        )
        server = _ListenerServer(config)
        self._server = server
        self._task = asyncio.create_task(self._serve(server, sock))
        self.address = (host, int(sock.getsockname()[1]))
        log.info("endpoint listening on %s:%d", *self.address)
        return self.address

    @staticmethod
    async def _serve(server: _ListenerServer, sock: socket.socket) -> None:
        try:
            await server.serve(sockets=[sock])
        finally:
            sock.close()

    async def close(self) -> None:
        server, task = self._server, self._task
        self._server = self._task = None
        if self.address is not None:
            log.info("endpoint closed on %s:%d", *self.address)
        self.address = None
        if server is None or task is None:
            return
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
