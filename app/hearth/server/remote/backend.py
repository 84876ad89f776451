"""One remote engine as a backend of the pipeline: a request goes out over HTTP and its
stream comes back as the same plain events the local engine yields.

Every request is streamed from the engine, even when the client asked for one JSON
reply: one decoding path, and a client that goes away frees the engine's slot at once
(closing the connection is how OpenAI-compatible servers and Ollama learn of it).
Failures name the engine: it is down or answers 5xx (502), it is busy (503 with its
Retry-After), it does not have the model (404), it refuses the request (400), its
stream breaks halfway or closes without its last line (``[DONE]``, ``"done": true``):
an error event, or a 502 for a client waiting on one reply, never a normal end. The
stream is read as events in generation.py (``RemoteGeneration``).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Protocol

import httpx

from hearth.config.engines import EngineKind, EngineSpec
from hearth.core.errors import HearthError, InvalidRequestError, ModelNotFoundError
from hearth.core.generation import Finished, FinishReason, Usage
from hearth.core.model_info import ModelInfo
from hearth.server.generation import Generation
from hearth.server.pipeline import PipelineRequest
from hearth.server.remote import ollama_wire, openai_wire
from hearth.server.remote.errors import RemoteEngineBusyError, RemoteEngineError
from hearth.server.remote.generation import Decoder, RemoteGeneration
from hearth.server.remote.httpx_stream import httpx_post, uses_proxy
from hearth.server.remote.probe import auth_headers
from hearth.server.remote.stream_http import (
    ConnectFailedError,
    ConnectTimeoutError,
    Streamed,
    StreamHttpError,
    StreamingClient,
    read_limited,
)

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 300.0  # between chunks: a big model's prefill can take minutes
_ERROR_BODY_LIMIT = 64 * 1024
_JSON = "application/json"


class EngineObserver(Protocol):
    """Told when a remote generation ends (the request log, with the engine's name)."""

    def __call__(
        self, request_id: str, model: str, finished: Finished, engine: str | None = None
    ) -> None: ...


class RemoteBackend:
    """One engine: pooled HTTP clients carrying its key, and the dialect it speaks.

    Generations stream through :class:`StreamingClient` (the hot path; httpx when a
    proxy applies); model lists and probes go through ``client`` (httpx).
    """

    def __init__(
        self,
        spec: EngineSpec,
        api_key: str | None,
        *,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        read_timeout: float = READ_TIMEOUT_S,
        observer: EngineObserver | None = None,
    ) -> None:
        self.spec = spec
        self._observer = observer
        self.client = httpx.AsyncClient(
            base_url=spec.url,
            headers=auth_headers(api_key),  # the key goes only to this engine's URL
            timeout=httpx.Timeout(read_timeout, connect=connect_timeout),
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
        )
        self._streams: StreamingClient | None = None
        headers = auth_headers(api_key)
        if not uses_proxy(spec.url) and StreamingClient.can_send(headers):
            self._streams = StreamingClient(spec.url, headers, connect_timeout=connect_timeout,
                                            read_timeout=read_timeout)  # fmt: skip

    @property
    def name(self) -> str:
        return self.spec.name

    def model_info(self, model: str, context_length: int | None = None) -> ModelInfo:
        """What the dialect encoders may say about a remote model."""
        namespaced = f"{self.name}/{model}"
        return ModelInfo(
            id=namespaced, path=Path(namespaced), architecture="remote", n_params=0,
            size_bytes=0, quantization="", n_ctx_train=context_length or 0,
            n_ctx_per_slot=context_length or 0, n_slots=0, n_vocab=0, chat_template=None,
            has_fim=False, created=int(self.spec.added),
        )  # fmt: skip

    async def start(self, request: PipelineRequest, info: ModelInfo, model: str) -> Generation:
        """Send ``request`` for ``model`` (its id at the engine); errors before the first
        byte of the stream are raised, as the local engine's are."""
        wire = ollama_wire if self.spec.kind is EngineKind.OLLAMA else openai_wire
        path, body = wire.request_body(request, model)
        decoder: Decoder = (
            ollama_wire.NdjsonDecoder()
            if self.spec.kind is EngineKind.OLLAMA
            else openai_wire.SseDecoder()
        )
        started = time.perf_counter()
        data = json.dumps(body, ensure_ascii=False).encode()
        try:
            if self._streams is not None:
                response: Streamed = await self._streams.post(path, data, _JSON)
            else:
                response = await httpx_post(self.client, path, data, _JSON)
        except StreamHttpError as exc:
            raise self.failed(request.request_id, info.id, self._transport_error(exc)) from None
        if response.status_code >= 400:
            error = await self._status_error(response, model)
            raise self.failed(request.request_id, info.id, error)
        log.debug("request %s streaming from engine %s", request.request_id, self.name)
        return RemoteGeneration(
            self, response, decoder, info=info, request_id=request.request_id, started=started
        )

    def failed(self, request_id: str, model: str, error: HearthError) -> HearthError:
        """``error``, after telling the observer, so the request log names the engine
        of a request that failed as well as of one it served."""
        usage = Usage(0, 0)
        self.observe(request_id, model, Finished(FinishReason.ERROR, usage, error=error.message,
                                                 request_id=request_id))  # fmt: skip
        return error

    def observe(self, request_id: str, model: str, finished: Finished) -> None:
        if self._observer is None:
            return
        try:
            self._observer(request_id, model, finished, engine=self.name)
        except Exception:  # an observer (the request log) must never break a response
            log.exception("generation observer failed")

    async def aclose(self) -> None:
        if self._streams is not None:
            await self._streams.aclose()
        await self.client.aclose()

    def _transport_error(self, exc: StreamHttpError) -> RemoteEngineError:
        if isinstance(exc, ConnectTimeoutError):
            what = f"no connection to {self.spec.url} within the connect timeout"
        elif isinstance(exc, ConnectFailedError):
            what = f"cannot connect to {self.spec.url}; is it running? ({exc})"
        else:
            what = f"the request to {self.spec.url} failed ({exc})"
        return RemoteEngineError(self.name, what)

    async def _status_error(self, response: Streamed, model: str) -> HearthError:
        body = await read_limited(response, _ERROR_BODY_LIMIT)
        status, message = response.status_code, openai_wire.error_message(body)
        if status in (401, 403):
            return RemoteEngineError(
                self.name,
                f"it refused Hearth's key for it (HTTP {status}: {message}). Store the right "
                f"one with 'hearth engines add {self.name} {self.spec.url} --api-key-stdin "
                "--replace'.",
            )
        if status in (429, 503):
            retry = _retry_after(response.headers.get("retry-after"))
            return RemoteEngineBusyError(self.name, message or f"HTTP {status}", retry)
        if status == 404:
            return ModelNotFoundError(
                f"Remote engine '{self.name}' does not serve '{model}' ({message})."
            )
        if 400 <= status < 500:
            return InvalidRequestError(
                f"Remote engine '{self.name}' refused the request: {message}"
            )
        return RemoteEngineError(self.name, f"it answered HTTP {status}: {message}")


def _retry_after(value: str | None) -> int:
    try:
        return max(1, int(float(value or "1")))
    except ValueError:
        return 1
