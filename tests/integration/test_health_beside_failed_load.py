"""A user's load that fails in the background while another model serves: ``/health``
stays 200 (the server serves), and the failure is reported where load status is (the
``load`` field of ``/health``, ``/hearth/v1/status``, ``/hearth/v1/events``, the log,
the app's Load alongside). Only when nothing can serve is the server unhealthy. Real
``hearth serve`` processes, tiny models."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import openai
import pytest

from hearth.core.errors import HearthError
from hearth.supervisor.client import WorkerClient
from hearth.supervisor.launch_options import LoadOptions
from hearth.supervisor.residency_loads import load_beside
from residency_serving import (
    BROKEN,
    LONG_CTX,
    Q4,
    Q8,
    broken_model,
    chat,
    lifecycle_events,
    long_stream,
    openai_client,
    three_models,
)
from server_process import start_serve

__all__ = ["broken_model", "three_models"]  # the fixtures, used by name


def _failed_state(url: str, model: str) -> dict:
    """Wait (on the pushed states, never a sleep) until the load of ``model`` fails."""
    with lifecycle_events(url) as states:
        for state in states:
            assert state["state"] != "ready" or state["model"] != model, state
            if state["state"] == "error":
                assert state["model"] == model
                return state
    raise AssertionError("the events stream ended")


async def _app_load(url: str, path: Path) -> HearthError:
    """The app's Load alongside of ``path``: the error the app shows as its failure."""
    async with WorkerClient(url) as worker:
        with pytest.raises(HearthError) as failed:
            await load_beside(worker, path, LoadOptions(), replace=False, timeout=60)
    return failed.value


def test_a_load_refused_in_the_background_leaves_the_serving_model_healthy(three_models, tmp_path):
    """Room for one model, Q8 busy streaming: the user's load of Q4 passes the check at
    once (Q8 was loaded just in time) but waits in the queue past its bound and is
    refused there. Q8 still serves: /health is 200, and the refusal is the load's
    outcome, not a load that seems to run forever."""
    server = start_serve(None, tmp_path, "--max-models", "1", "--load-queue-timeout", "1",
                         ctx=LONG_CTX, parallel=2)  # fmt: skip
    url, client = server.base_url, openai_client(server)
    try:
        with long_stream(url, Q8) as chunks:
            started = httpx.post(f"{url}/hearth/v1/load", json={"model": Q4})
            assert started.status_code == 202
            failed = _failed_state(url, Q4)
            assert "can't be loaded now" in failed["error"] and Q8 in failed["error"]
            health = httpx.get(f"{url}/health")
            assert health.status_code == 200
            assert health.json()["status"] == "ok" and health.json()["model"] == Q8
            assert health.json()["load"]["error"] == failed["error"]
            assert health.json()["load"]["model"] == Q4
            assert httpx.get(f"{url}/hearth/v1/status").json()["state"] == "error"
            assert f"load of {Q4} refused" in server.log_text()
            assert not any("error" in c for c in (next(chunks) for _ in range(3)))
        assert chat(client, Q8) == Q8
        # Not stuck "loading": the next load is taken, not answered 409.
        again = httpx.post(f"{url}/hearth/v1/load", json={"model": Q8})
        assert again.status_code == 202
    finally:
        server.stop()


def test_a_failed_load_beside_a_serving_model_keeps_health_ok(
    three_models, broken_model, tiny_model_q8, tmp_path
):  # fmt: skip
    """Q8 serves; the user's load of a broken library model fails in the background.
    /health stays 200 with the failure in its ``load`` field, the app's Load alongside
    fails with llama.cpp's reason, and Q8 answers. Once Q8 is unloaded, nothing can
    serve and the last failure makes /health 503 "error"."""
    server = start_serve(tiny_model_q8, tmp_path)
    url, client = server.base_url, openai_client(server)
    try:
        started = httpx.post(f"{url}/hearth/v1/load", json={"model": BROKEN})
        assert started.status_code == 202, started.text
        failed = _failed_state(url, BROKEN)
        health = httpx.get(f"{url}/health")
        assert health.status_code == 200
        assert health.json() == {"status": "ok", "model": Q8, "load": failed}
        assert f"Loading {BROKEN} failed" in server.log_text()
        assert chat(client, Q8) == Q8

        app_failure = asyncio.run(_app_load(url, broken_model))
        assert app_failure.message == failed["error"]
        assert httpx.get(f"{url}/health").status_code == 200

        assert httpx.post(f"{url}/hearth/v1/unload", json={"model": Q8}).status_code == 200
        # Nothing loaded: the server is ready for requests that name a model (JIT).
        assert httpx.get(f"{url}/health").json() == {"status": "ok", "model": None}
        httpx.post(f"{url}/hearth/v1/load", json={"model": BROKEN})
        alone = _failed_state(url, BROKEN)
        health = httpx.get(f"{url}/health")
        assert health.status_code == 503
        assert health.json() == {"status": "error", "error": alone["error"], "model": BROKEN}
        with pytest.raises(openai.APIStatusError) as jit:
            chat(client, BROKEN)
        assert jit.value.status_code == 503
        assert jit.value.response.json()["error"]["code"] == "model_load_failed"
    finally:
        server.stop()
