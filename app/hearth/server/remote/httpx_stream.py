"""The streamed POST through httpx, in :class:`~.stream_http.Streamed`'s shape: for an
engine behind a proxy (``HTTP(S)_PROXY``), which httpx applies and the lean client
(:mod:`.stream_http`) does not speak."""

from __future__ import annotations

import urllib.request
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import httpx

from hearth.server.remote.stream_http import (
    ConnectFailedError,
    ConnectTimeoutError,
    ReadTimeoutError,
    StreamHttpError,
)


def uses_proxy(url: str) -> bool:
    """Whether the environment routes ``url`` through a proxy (httpx then carries it)."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass(parts.hostname or "")


class HttpxResponse:
    """httpx's streamed response as a :class:`Streamed` (the proxy path)."""

    def __init__(self, response: httpx.Response) -> None:
        self.status_code = response.status_code
        self.headers = {k.lower(): v for k, v in response.headers.items()}
        self._response = response

    @property
    def is_closed(self) -> bool:
        return self._response.is_closed

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            async for data in self._response.aiter_bytes():  # gzip undone
                yield data
        except httpx.HTTPError as exc:
            raise as_stream_error(exc) from None

    async def aclose(self) -> None:
        await self._response.aclose()

    async def release(self) -> None:
        await self._response.aclose()


async def httpx_post(
    client: httpx.AsyncClient, path: str, body: bytes, content_type: str
) -> HttpxResponse:
    """The same POST through httpx (which applies the environment's proxy settings)."""
    request = client.build_request("POST", path, content=body,
                                   headers={"Content-Type": content_type})  # fmt: skip
    try:
        try:
            response = await client.send(request, stream=True)
        except (httpx.RemoteProtocolError, httpx.ReadError):  # a stale pooled connection
            response = await client.send(request, stream=True)
    except httpx.HTTPError as exc:
        raise as_stream_error(exc) from None
    return HttpxResponse(response)


def as_stream_error(exc: httpx.HTTPError) -> StreamHttpError:
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, httpx.ConnectTimeout):
        return ConnectTimeoutError(text)
    if isinstance(exc, httpx.ConnectError):
        return ConnectFailedError(text)
    if isinstance(exc, httpx.TimeoutException):
        return ReadTimeoutError(text)
    return StreamHttpError(text)
