"""Failures of a remote engine, each naming the engine, so a client (and the person
reading the request log) can tell Hearth's own errors from the engine's."""

from __future__ import annotations

from hearth.core.errors import HearthError, QueueFullError


class RemoteEngineError(HearthError):
    """The engine is down, answered 5xx, refused Hearth's key for it, timed out, or
    broke its stream: an HTTP 502 (Bad Gateway) at Hearth's edge."""

    code = "remote_engine_error"

    def __init__(self, engine: str, message: str) -> None:
        super().__init__(f"Remote engine '{engine}': {message}")
        self.engine = engine


class RemoteEngineBusyError(QueueFullError):
    """The engine said it is busy (429 or 503): a 503 with its Retry-After."""

    code = "remote_engine_busy"

    def __init__(self, engine: str, message: str, retry_after_s: int = 1) -> None:
        super().__init__(f"Remote engine '{engine}' is busy: {message}", retry_after_s)
        self.engine = engine
