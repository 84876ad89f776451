"""Finding the Hearth workers that run now, and the key each one takes.

Shared by ``hearth ps`` and ``hearth run``: the app's worker is opened with its
per-launch token (from its private runtime record); a ``hearth serve`` with keys with
``HEARTH_API_KEY`` or a key made with ``hearth keys create``.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

import httpx

from hearth.config.launch import API_KEY_ENV
from hearth.config.runtime import WorkerRecord, running

log = logging.getLogger(__name__)

_PROBE_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class LiveWorker:
    record: WorkerRecord
    token: str | None  # the bearer token that opened it (None: it needs none)
    status: dict[str, Any]


def _candidate_tokens(record: WorkerRecord) -> list[str | None]:
    tokens: list[str | None] = [record.token] if record.token else [None]
    if os.environ.get(API_KEY_ENV):
        tokens.append(os.environ[API_KEY_ENV])
    try:
        from hearth.config.api_keys import load_keys

        tokens.extend(k.key for k in load_keys())
    except Exception as exc:  # an unreadable key store only means fewer keys to try
        log.debug("no stored keys to try: %s", exc)
    return tokens


def probe(record: WorkerRecord) -> LiveWorker | None:
    """The worker's ``/hearth/v1/status`` with the first token it accepts, or None."""
    with httpx.Client(base_url=record.base_url, timeout=_PROBE_TIMEOUT_S, trust_env=False) as http:
        for token in _candidate_tokens(record):
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            try:
                response = http.get("/hearth/v1/status", headers=headers)
            except httpx.TransportError:
                return None
            if response.status_code == 200:
                return LiveWorker(record, token, response.json())
            if response.status_code not in (401, 403):
                return None
    return None


def live_workers() -> list[LiveWorker]:
    """The running workers that answer, the app's first."""
    return [worker for record in running() if (worker := probe(record)) is not None]
