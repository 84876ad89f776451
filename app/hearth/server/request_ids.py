"""The id every HTTP request gets at the edge.

The outermost middleware (the request log) gives it, keeps it in the ASGI scope and
returns it as ``X-Request-Id``; routes pass it down to the engine's job, whose finished
event carries it back, so the log can join a request with its generation by id.
"""

from __future__ import annotations

import secrets
from collections.abc import MutableMapping
from typing import Any

HEADER = b"x-request-id"
_SCOPE_KEY = "hearth.request_id"


def new_request_id() -> str:
    return f"req_{secrets.token_hex(12)}"


def assign(scope: MutableMapping[str, Any]) -> str:
    """The scope's id, given now if the edge has not given one yet."""
    existing = scope.get(_SCOPE_KEY)
    if isinstance(existing, str):
        return existing
    request_id = new_request_id()
    scope[_SCOPE_KEY] = request_id
    return request_id
