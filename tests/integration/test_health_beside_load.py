"""A model loading beside one that serves: ``/health`` stays 200 "ok" (the server
serves), with the load in progress in its ``load`` field, as llama-server's router and
Ollama stay up while a model loads; 503 "loading" only while nothing can serve. The
app's Load alongside (``load_beside``) follows the load there to its end, success or
failure.

The load is held in progress deterministically, on any machine: `--max-models 2`, the
user's model F16 pinned, Q8 loaded just in time and busy with a stream. A third model
must wait in the load queue (its bound far off) until the stream ends and Q8, idle,
can be evicted; until then it is announced, "loading", at progress 0. Real ``hearth
serve`` processes, tiny models."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from hearth.core.errors import ModelLoadError
from hearth.core.residency import LoadedModel
from hearth.supervisor.client import WorkerClient
from hearth.supervisor.launch_options import LoadOptions
from hearth.supervisor.residency_loads import load_beside
from residency_serving import (
    BROKEN,
    F16,
    LONG_CTX,
    Q4,
    Q8,
    broken_model,
    chat,
    long_stream,
    openai_client,
    ps_names,
    three_models,
)
from server_process import ServeProcess, start_serve

__all__ = ["broken_model", "three_models"]  # the fixtures, used by name


class AppLoad:
    """The app's Load alongside of one model, run on its own thread (as the app runs it
    off the Qt thread): the progress it reported, and its outcome."""

    def __init__(self, url: str, path: Path, pool: ThreadPoolExecutor) -> None:
        self.progress: list[float | None] = []
        self.reported = threading.Event()
        self.outcome: Future[LoadedModel] = pool.submit(asyncio.run, self._load(url, path))

    async def _load(self, url: str, path: Path) -> LoadedModel:
        async with WorkerClient(url) as worker:
            return await load_beside(worker, path, LoadOptions(), replace=False,
                                     on_progress=self._report, timeout=120)  # fmt: skip

    def _report(self, fraction: float | None) -> None:
        self.progress.append(fraction)
        self.reported.set()


@contextmanager
def pinned_f16_and_busy_q8(tmp_path: Path, tiny_model_f16: Path) -> Iterator[ServeProcess]:
    """F16 loaded by the user, Q8 just in time and busy streaming until the block's
    inner ``with`` ends: a third model's load waits in the queue meanwhile."""
    server = start_serve(tiny_model_f16, tmp_path, "--max-models", "2",
                         "--load-queue-timeout", "600", ctx=LONG_CTX, parallel=2)  # fmt: skip
    try:
        yield server
    finally:
        server.stop()


def _health(url: str) -> httpx.Response:
    return httpx.get(f"{url}/health", timeout=10)


def test_health_is_ok_while_a_model_loads_beside_a_serving_one(
    three_models, tiny_model_f16, tiny_model_q4km, tmp_path
):  # fmt: skip
    """While Q4 loads beside F16 and Q8, /health is 200 "ok" with the serving model and
    the load in ``load``; F16 answers meanwhile; the app's Load alongside reports the
    load's progress (not "nothing loading") and completes once the load does."""
    with pinned_f16_and_busy_q8(tmp_path, tiny_model_f16) as server, \
            ThreadPoolExecutor(1) as pool:  # fmt: skip
        url = server.base_url
        with long_stream(url, Q8):
            load = AppLoad(url, tiny_model_q4km, pool)
            assert load.reported.wait(60), "load_beside never polled the worker"
            health = _health(url)
            assert health.status_code == 200, health.text
            body = health.json()
            assert body["status"] == "ok" and body["model"] == Q8  # the most recently used
            assert {k: body["load"][k] for k in ("state", "progress", "model", "error")} == {
                "state": "loading", "progress": 0.0, "model": Q4, "error": None}  # fmt: skip
            assert chat(openai_client(server), F16) == F16  # it serves during the load
            assert _health(url).json()["model"] == F16  # now the most recently used
            assert not load.outcome.done()  # still waiting: neither loaded nor failed
            assert load.progress and all(p == 0.0 for p in load.progress), load.progress
        # The stream is closed: Q8, idle, is evicted and Q4 loads beside F16.
        loaded = load.outcome.result(timeout=120)
        assert loaded.info.id == Q4
        assert ps_names(url) == sorted([F16, Q4])
        assert _health(url).json() == {"status": "ok", "model": Q4}
        assert chat(openai_client(server), Q4) == Q4


def test_the_app_s_load_alongside_still_reports_a_failure_after_its_progress(
    three_models, broken_model, tiny_model_f16, tmp_path
):  # fmt: skip
    """The same wait, for a model llama.cpp refuses: /health is 200 throughout (F16
    serves), the app's Load alongside sees the load in progress first, then fails with
    llama.cpp's reason, the one /health's ``load`` reports."""
    with pinned_f16_and_busy_q8(tmp_path, tiny_model_f16) as server, \
            ThreadPoolExecutor(1) as pool:  # fmt: skip
        url = server.base_url
        with long_stream(url, Q8):
            load = AppLoad(url, broken_model, pool)
            assert load.reported.wait(60), "load_beside never polled the worker"
            health = _health(url)
            assert health.status_code == 200
            assert health.json()["load"]["state"] == "loading"
            assert health.json()["load"]["model"] == BROKEN
            assert not load.outcome.done()
        with pytest.raises(ModelLoadError) as failed:
            load.outcome.result(timeout=120)
        assert load.progress[0] == 0.0
        health = _health(url)
        assert health.status_code == 200
        body = health.json()
        assert body["status"] == "ok" and body["model"] == F16
        assert body["load"]["state"] == "error" and body["load"]["model"] == BROKEN
        assert failed.value.message == body["load"]["error"]
        assert f"Loading {BROKEN} failed" in server.log_text()
        assert chat(openai_client(server), F16) == F16
