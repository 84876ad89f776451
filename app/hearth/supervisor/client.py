"""Typed async client for the worker's HTTP API (OpenAI-compatible routes + /health).

Cancelling a stream means closing it: cancel the task that iterates
``stream_chat()`` (or ``aclose()`` the iterator); the HTTP response is closed and
the worker frees the slot when it sees the client disconnect.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = httpx.Timeout(10.0)
# A long prompt can take a while to prefill before the first chunk arrives.
STREAM_TIMEOUT = httpx.Timeout(10.0, read=600.0)


class WorkerError(Exception):
    """The worker answered with an error, or the conversation with it broke off."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        error_type: str | None = None,
        code: str | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.error_type = error_type
        self.code = code
        self.param = param


class WorkerUnavailableError(WorkerError):
    """The worker could not be reached, or the connection dropped mid-response."""


@dataclass(frozen=True)
class Health:
    """What ``GET /health`` said. ``status`` is "ok", "loading" or "error"."""

    status: str
    http_status: int
    model: str | None = None
    progress: float | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.http_status == 200 and self.status == "ok"


def _error_from_body(status: int, body: bytes) -> WorkerError:
    """Build a WorkerError from an OpenAI-shaped error body (or whatever came back)."""
    try:
        data: Any = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict):
            return WorkerError(
                str(err.get("message") or f"HTTP {status}"),
                status=status,
                error_type=_opt_str(err.get("type")),
                code=_opt_str(err.get("code")),
                param=_opt_str(err.get("param")),
            )
        if isinstance(err, str):
            return WorkerError(err, status=status)
        if isinstance(data.get("detail"), str):
            return WorkerError(data["detail"], status=status)
    text = body.decode("utf-8", "replace").strip()[:500]
    return WorkerError(f"The worker answered HTTP {status}: {text or 'no details'}", status=status)


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


class WorkerClient:
    """Talks to one worker at ``base_url``; sends the per-launch bearer token."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.base_url = base_url.rstrip("/")
        # trust_env=False: never send loopback traffic through a configured proxy.
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=DEFAULT_TIMEOUT,
            trust_env=False,
            transport=transport,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> WorkerClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ routes
    async def health(self) -> Health:
        """``GET /health``. Raises WorkerUnavailableError if nobody answers."""
        try:
            resp = await self._http.get("/health")
        except httpx.TransportError as exc:
            raise WorkerUnavailableError(f"The worker is not reachable: {exc}") from exc
        try:
            data: Any = resp.json()
        except ValueError:
            data = {}
        if not isinstance(data, dict):
            data = {}
        progress = data.get("progress")
        error = data.get("error")
        if isinstance(error, dict):
            error = error.get("message")
        return Health(
            status=str(data.get("status") or ("ok" if resp.status_code == 200 else "error")),
            http_status=resp.status_code,
            model=_opt_str(data.get("model")),
            progress=float(progress) if isinstance(progress, int | float) else None,
            error=_opt_str(error),
        )

    async def models(self) -> list[str]:
        """The ids of the models the worker serves (``GET /v1/models``)."""
        data = await self._get_json("/v1/models")
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise WorkerError("The worker sent a malformed model list.")
        return [str(m["id"]) for m in items if isinstance(m, dict) and "id" in m]

    async def _get_json(self, path: str) -> Any:
        try:
            resp = await self._http.get(path)
        except httpx.TransportError as exc:
            raise WorkerUnavailableError(f"The worker is not reachable: {exc}") from exc
        if resp.status_code != 200:
            raise _error_from_body(resp.status_code, resp.content)
        return resp.json()

    async def stream_chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        model: str | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
        **extra: Any,
    ) -> AsyncIterator[str]:
        """Stream a chat completion; yields the text of each delta as it arrives.

        Raises WorkerError with the worker's own message on an error status or an
        in-stream error chunk, and WorkerUnavailableError if the stream breaks off
        (e.g. the worker crashed) before ``data: [DONE]``.
        """
        body: dict[str, Any] = {"messages": [dict(m) for m in messages], "stream": True}
        optional = {
            "model": model,
            "temperature": temperature,
            "top_p": top_p,
            "max_tokens": max_tokens,
            "stop": list(stop) if stop else None,
            "seed": seed,
        }
        body.update({k: v for k, v in optional.items() if v is not None})
        body.update(extra)
        try:
            async with self._http.stream(
                "POST", "/v1/chat/completions", json=body, timeout=STREAM_TIMEOUT
            ) as resp:
                if resp.status_code != 200:
                    raise _error_from_body(resp.status_code, await resp.aread())
                finished: WorkerError | None = None
                done = False
                # Read to the end even after [DONE] or an error chunk (the worker ends the
                # body right there): leaving httpx's line iterator half-consumed would
                # abandon its async generators, which loops without asyncgen hooks
                # (qasync) then finalize outside the loop.
                async for line in resp.aiter_lines():
                    payload = _sse_data(line)
                    if done or payload is None:
                        continue
                    if payload == "[DONE]":
                        done = True
                        continue
                    try:
                        text = _delta_text(payload)
                    except WorkerError as exc:
                        finished, done = exc, True
                        continue
                    if text:
                        yield text
        except httpx.TransportError as exc:
            raise WorkerUnavailableError(
                f"The connection to the model worker broke off: {exc}"
            ) from exc
        if finished is not None:
            raise finished
        if not done:
            raise WorkerUnavailableError("The model worker ended the reply without finishing it.")


def _sse_data(line: str) -> str | None:
    """The payload of an SSE ``data:`` line, or None for any other line."""
    if not line.startswith("data:"):
        return None
    return line[5:].strip()


def _delta_text(payload: str) -> str:
    try:
        chunk: Any = json.loads(payload)
    except ValueError as exc:
        raise WorkerError(f"The worker sent a malformed stream chunk: {payload[:200]}") from exc
    if not isinstance(chunk, dict):
        return ""
    if "error" in chunk:
        err = _error_from_body(200, payload.encode())
        err.status = None
        raise err
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices:
        return ""
    first = choices[0]
    delta = first.get("delta") if isinstance(first, dict) else None
    content = delta.get("content") if isinstance(delta, dict) else None
    return content if isinstance(content, str) else ""
