"""Typed async client for the worker's HTTP API (OpenAI-compatible routes + /health).

Cancelling a stream means closing it: cancel the task that iterates
``stream_chat()`` (or ``aclose()`` the iterator); the HTTP response is closed and
the worker frees the slot when it sees the client disconnect.

``stream_chat()`` yields the text deltas; ``stream_chat_events()`` yields the same
deltas and, last, one ``ChatStreamStats`` with the usage and timings the worker sent
(and the tool calls the model made, when ``tools`` were offered).
``engines`` tests remote engines (``engines_api.py``); the values and errors it hands
back are in ``client_types.py``.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import sys
from array import array
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any

import httpx

from hearth.supervisor.client_types import (
    ChatStreamStats,
    Health,
    ModelMeta,
    ReasoningText,
    StreamedToolCall,
    WorkerError,
    WorkerUnavailableError,
    error_from_body,
    finish_stats,
    opt_int,
    opt_str,
    parse_chunk,
    sse_data,
)
from hearth.supervisor.engines_api import EnginesApi
from hearth.supervisor.residency_status import ResidencyStatus, decode_residency

__all__ = [
    "ChatStreamStats",
    "Health",
    "ModelMeta",
    "ReasoningText",
    "ResidencyStatus",
    "StreamedToolCall",
    "WorkerClient",
    "WorkerError",
    "WorkerUnavailableError",
]

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = httpx.Timeout(10.0)
# A long prompt can take a while to prefill before the first chunk arrives.
STREAM_TIMEOUT = httpx.Timeout(10.0, read=600.0)


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

    @property
    def engines(self) -> EnginesApi:
        """Remote engines: test one as typed or as saved (``/hearth/v1/engines``)."""
        return EnginesApi(self)

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
        load = data.get("load")
        if not isinstance(load, dict):
            load = {}
        load_progress = load.get("progress")
        return Health(
            status=str(data.get("status") or ("ok" if resp.status_code == 200 else "error")),
            http_status=resp.status_code,
            model=opt_str(data.get("model")),
            progress=float(progress) if isinstance(progress, int | float) else None,
            error=opt_str(error),
            load_error=opt_str(load.get("error")),
            load_state=opt_str(load.get("state")),
            load_model=opt_str(load.get("model")),
            load_progress=(
                float(load_progress) if isinstance(load_progress, int | float) else None
            ),
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
                    n_ctx=opt_int(meta.get("n_ctx")),
                    n_ctx_train=opt_int(meta.get("n_ctx_train")),
                    n_slots=opt_int(meta.get("n_slots")),
                    remote=meta.get("remote") is True,
                    capabilities=tuple(str(c) for c in meta.get("capabilities") or ()),
                    vision=meta.get("vision") is True or "vision" in _listed(meta, "capabilities"),
                )
            )
        return out

    async def embeddings(self, texts: Sequence[str], *, model: str) -> list[list[float]]:
        """``POST /v1/embeddings`` of ``texts`` with ``model``: normalised vectors, in
        order. Asked as base64 (little-endian float32), which decodes in microseconds
        where a JSON list of floats would take the GUI's thread milliseconds."""
        body = {"model": model, "input": list(texts), "encoding_format": "base64"}
        data = await self.post_json("/v1/embeddings", body, timeout=STREAM_TIMEOUT)
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list) or len(items) != len(texts):
            raise WorkerError("The worker sent a malformed embeddings answer.")
        ordered = sorted(items, key=lambda item: int(item.get("index", 0)))
        vectors = []
        for item in ordered:
            raw = base64.b64decode(str(item.get("embedding") or ""))
            floats = array("f", raw[: len(raw) // 4 * 4])
            if sys.byteorder == "big":
                floats.byteswap()
            vectors.append(floats.tolist())
        return vectors

    async def admin_status(self) -> dict[str, Any]:
        """``GET /hearth/v1/status``: state, slots, queue and the backend's devices."""
        data = await self._get_json("/hearth/v1/status")
        return data if isinstance(data, dict) else {}

    async def residency(self) -> ResidencyStatus:
        """Every loaded model (memory, busy slots, pinned, expiry) and the limits they
        share, from ``GET /hearth/v1/status``."""
        return decode_residency(await self.admin_status())

    async def load(
        self, model: str, *, replace: bool = False, settings: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """``POST /hearth/v1/load``: load a library model by name, alongside the loaded
        ones or, with ``replace``, instead of them; ``settings`` are LoadConfig's fields.
        Returns the lifecycle state it started (progress comes as status/events)."""
        body = {**(settings or {}), "model": model, "replace": replace}
        data = await self.post_json("/hearth/v1/load", body)
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
        data = await self.post_json("/hearth/v1/load/cancel")
        return bool(data.get("cancelled")) if isinstance(data, dict) else False

    async def unload(self, model: str | None = None) -> None:
        """``POST /hearth/v1/unload``: free ``model`` (every model without one) but keep
        the worker running."""
        await self.post_json("/hearth/v1/unload", {"model": model} if model else None)

    async def touch(self, model: str) -> None:
        """Mark the loaded ``model`` as just used, with no generation: Ollama's
        ``POST /api/generate`` without a prompt, which only resolves the model (and
        would load it just in time were it not loaded)."""
        await self.post_json("/api/generate", {"model": model, "stream": False})

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
        state = await self.post_json("/hearth/v1/access", body)
        port_now = state.get("port") if isinstance(state, dict) else None
        return int(port_now) if isinstance(port_now, int) else None

    async def post_json(
        self,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        timeout: httpx.Timeout | None = None,
    ) -> Any:
        """POST ``body`` to an admin route; its JSON answer, or a WorkerError with the
        worker's own message."""
        try:
            resp = await self._http.post(path, json=body, timeout=timeout or DEFAULT_TIMEOUT)
        except httpx.TransportError as exc:
            raise WorkerUnavailableError(f"The worker is not reachable: {exc}") from exc
        if resp.status_code not in (200, 202):
            raise error_from_body(resp.status_code, resp.content)
        return resp.json()

    async def _get_json(self, path: str) -> Any:
        try:
            resp = await self._http.get(path)
        except httpx.TransportError as exc:
            raise WorkerUnavailableError(f"The worker is not reachable: {exc}") from exc
        if resp.status_code != 200:
            raise error_from_body(resp.status_code, resp.content)
        return resp.json()

    async def stream_chat(
        self,
        messages: Sequence[Mapping[str, Any]],
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
        messages: Sequence[Mapping[str, Any]],
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
                    raise error_from_body(resp.status_code, await resp.aread())
                finished: WorkerError | None = None
                done = False
                # Read to the end even after [DONE] or an error chunk (the worker ends the
                # body right there): leaving httpx's line iterator half-consumed would
                # abandon its async generators, which loops without asyncgen hooks
                # (qasync) then finalize outside the loop.
                async for line in resp.aiter_lines():
                    payload = sse_data(line)
                    if done or payload is None:
                        continue
                    if payload == "[DONE]":
                        done = True
                        continue
                    try:
                        text = parse_chunk(payload, stats)
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
        yield finish_stats(stats)


def _listed(meta: dict[str, Any], key: str) -> list[Any]:
    """``meta[key]`` when it is a list (else empty)."""
    value = meta.get(key)
    return value if isinstance(value, list) else []
