"""Typed async client for the worker's HTTP API (OpenAI-compatible routes + /health).

Cancelling a stream means closing it: cancel the task that iterates
``stream_chat()`` (or ``aclose()`` the iterator); the HTTP response is closed and
the worker frees the slot when it sees the client disconnect.

``stream_chat()`` yields the text deltas; ``stream_chat_events()`` yields the same
deltas and, last, one ``ChatStreamStats`` with the usage and timings the worker sent.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncGenerator, Mapping, Sequence
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


@dataclass(frozen=True)
class ModelMeta:
    """What ``GET /v1/models`` says about the loaded model (unknown fields are None)."""

    id: str
    n_ctx: int | None = None  # context per slot: the most one conversation can use
    n_ctx_train: int | None = None
    n_slots: int | None = None


class ReasoningText(str):
    """A streamed piece of the model's reasoning (``reasoning_content``), not of the
    answer: ``stream_chat_events`` yields it; ``stream_chat`` leaves it out."""


@dataclass(frozen=True)
class ChatStreamStats:
    """The end of a streamed chat completion: usage and timings, as the worker sent them."""

    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    ttft_ms: float | None = None
    tokens_per_s: float | None = None

    @property
    def context_used(self) -> int | None:
        if self.prompt_tokens is None:
            return None
        return self.prompt_tokens + (self.completion_tokens or 0)


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
        self.token = token  # the per-launch token (the app's own; never a user key)
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

    async def model_meta(self) -> list[ModelMeta]:
        """The served models with their context size (``GET /v1/models`` ``meta``)."""
        data = await self._get_json("/v1/models")
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise WorkerError("The worker sent a malformed model list.")
        out = []
        for item in items:
            if not isinstance(item, dict) or "id" not in item:
                continue
            meta = item.get("meta")
            if not isinstance(meta, dict):
                meta = {}
            out.append(
                ModelMeta(
                    id=str(item["id"]),
                    n_ctx=_opt_int(meta.get("n_ctx")),
                    n_ctx_train=_opt_int(meta.get("n_ctx_train")),
                    n_slots=_opt_int(meta.get("n_slots")),
                )
            )
        return out

    async def admin_status(self) -> dict[str, Any]:
        """``GET /hearth/v1/status``: state, slots, queue and the backend's devices."""
        data = await self._get_json("/hearth/v1/status")
        return data if isinstance(data, dict) else {}

    async def request_log(self, limit: int = 50) -> list[dict[str, Any]]:
        """``GET /hearth/v1/requests``: recent generations, newest first (each with the
        served ``model`` added)."""
        data = await self._get_json(f"/hearth/v1/requests?limit={int(limit)}")
        if not isinstance(data, dict) or not isinstance(data.get("requests"), list):
            raise WorkerError("The worker sent a malformed request log.")
        model = data.get("model")
        return [{"model": model, **r} for r in data["requests"] if isinstance(r, dict)]

    async def cancel_load(self) -> bool:
        """``POST /hearth/v1/load/cancel``; True if a load was in progress."""
        data = await self._post_json("/hearth/v1/load/cancel")
        return bool(data.get("cancelled")) if isinstance(data, dict) else False

    async def unload(self) -> None:
        """``POST /hearth/v1/unload``: free the model but keep the worker running."""
        await self._post_json("/hearth/v1/unload")

    async def set_access(
        self, endpoint_open: bool, require_key: bool, *, port: int, lan: bool = False
    ) -> int | None:
        """``POST /hearth/v1/access``: open, move or close the endpoint on ``port`` (every
        interface with ``lan``) and choose whether loopback clients need a key, without a
        restart (the worker re-reads the keys). Returns the port it listens on, None when
        closed. A key store it cannot read (code ``secret_store_unavailable``) or a port in
        use (``address_in_use``) is a WorkerError; the endpoint is closed then."""
        body = {"endpoint_open": endpoint_open, "require_key": require_key, "port": port,
                "lan": lan}  # fmt: skip
        state = await self._post_json("/hearth/v1/access", body)
        port_now = state.get("port") if isinstance(state, dict) else None
        return int(port_now) if isinstance(port_now, int) else None

    async def _post_json(self, path: str, body: dict[str, Any] | None = None) -> Any:
        try:
            resp = await self._http.post(path, json=body)
        except httpx.TransportError as exc:
            raise WorkerUnavailableError(f"The worker is not reachable: {exc}") from exc
        if resp.status_code not in (200, 202):
            raise _error_from_body(resp.status_code, resp.content)
        return resp.json()

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
    ) -> AsyncGenerator[str, None]:
        """Stream a chat completion; yields the text of each delta as it arrives.

        Raises WorkerError with the worker's own message on an error status or an
        in-stream error chunk, and WorkerUnavailableError if the stream breaks off
        (e.g. the worker crashed) before ``data: [DONE]``.
        """
        events = self.stream_chat_events(
            messages,
            model=model,
            temperature=temperature,
            top_p=top_p,
            max_tokens=max_tokens,
            stop=stop,
            seed=seed,
            **extra,
        )
        async with contextlib.aclosing(events):
            async for event in events:
                if isinstance(event, str) and not isinstance(event, ReasoningText):
                    yield event

    async def stream_chat_events(
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
    ) -> AsyncGenerator[str | ChatStreamStats, None]:
        """Like ``stream_chat``, then one ``ChatStreamStats`` once the reply finished.

        Extra keyword arguments go into the request body as they are (``top_k``,
        ``min_p``, ``repeat_penalty``...). Errors are raised as in ``stream_chat``.
        """
        body: dict[str, Any] = {
            "messages": [dict(m) for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
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
        stats: dict[str, Any] = {}
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
                        text = _parse_chunk(payload, stats)
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
        yield ChatStreamStats(**stats)


def _sse_data(line: str) -> str | None:
    """The payload of an SSE ``data:`` line, or None for any other line."""
    if not line.startswith("data:"):
        return None
    return line[5:].strip()


def _opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _opt_float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _parse_chunk(payload: str, stats: dict[str, Any]) -> str:
    """The delta text of one chunk; usage, timings and finish reason go into ``stats``."""
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
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        stats["prompt_tokens"] = _opt_int(usage.get("prompt_tokens"))
        stats["completion_tokens"] = _opt_int(usage.get("completion_tokens"))
        details = usage.get("prompt_tokens_details")
        if isinstance(details, dict):
            stats["cached_tokens"] = _opt_int(details.get("cached_tokens"))
    timings = chunk.get("timings")
    if isinstance(timings, dict):
        stats["ttft_ms"] = _opt_float(timings.get("ttft_ms"))
        stats["tokens_per_s"] = _opt_float(timings.get("decode_tokens_per_s"))
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices:
        return ""
    first = choices[0]
    if not isinstance(first, dict):
        return ""
    if isinstance(first.get("finish_reason"), str):
        stats["finish_reason"] = first["finish_reason"]
    delta = first.get("delta")
    if not isinstance(delta, dict):
        return ""
    content, reasoning = delta.get("content"), delta.get("reasoning_content")
    if isinstance(content, str) and content:
        return content
    return ReasoningText(reasoning) if isinstance(reasoning, str) and reasoning else ""
