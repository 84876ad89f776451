"""Several models loaded at once in one `hearth serve`: routing by name, eviction of the
least recently used idle model, never a busy one nor the user's pinned one, the load
queue's bound, no reload storms, and per-model keep_alive. Real servers, the official
clients, tiny models."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import subprocess
import sys
import time
from pathlib import Path

import anthropic
import httpx
import ollama
import openai
import pytest

from hearth.supervisor.client import WorkerClient
from hearth.supervisor.client_types import WorkerError
from hearth.supervisor.launch_options import LoadOptions
from hearth.supervisor.residency_loads import load_beside
from residency_serving import (
    F16,
    LONG_CTX,
    Q4,
    Q8,
    chat,
    lifecycle_events,
    long_stream,
    openai_client,
    ps_names,
    status_of,
    three_models,
)
from server_process import start_serve

__all__ = ["three_models"]  # the fixture, used by name


def test_two_models_serve_concurrent_requests_by_name(three_models, tmp_path):
    """Chat requests to two models at once are each answered by the model they name,
    both stay loaded (one load each), and an embedding model answers beside them."""
    server = start_serve(None, tmp_path, parallel=2)
    url, client = server.base_url, openai_client(server)
    try:
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            names = [Q8, Q4] * 3
            answered = list(pool.map(lambda m: chat(client, m), names))
        assert answered == names
        assert ps_names(url) == sorted([Q8, Q4])
        for entry in httpx.get(f"{url}/api/ps").json()["models"]:  # Ollama's shape
            assert 0 <= entry["size_vram"] <= entry["size"] and entry["size"] > 0
            assert entry["expires_at"].endswith("Z") and entry["context_length"] == 512
        status = status_of(url)
        assert status["load_id"] == 2  # one load per model, whatever the order of arrival
        assert sorted(m["info"]["id"] for m in status["models"]) == sorted([Q8, Q4])
        assert all(m["memory_bytes"] > 0 and not m["pinned"] for m in status["models"])
        assert status["limits"]["max_models"] == 3

        ps = [sys.executable, "-m", "hearth", "ps", "--json"]
        listed = subprocess.run(ps, capture_output=True, text=True, timeout=120, check=True)
        rows = [r for r in json.loads(listed.stdout) if r["pid"] == server.process.pid]
        assert sorted((r["model"], r["state"], r["pinned"]) for r in rows) == [
            (Q4, "ready", False), (Q8, "ready", False)]  # fmt: skip
        assert all(r["model_memory"] > 0 and r["unloads"].startswith("in ") for r in rows)

        vectors = client.embeddings.create(model=F16, input=["a b c", "d e"])
        assert vectors.model == F16 and len(vectors.data) == 2
        assert chat(client, Q8) == Q8  # the chat model is still there
        assert ps_names(url) == sorted([F16, Q8, Q4]) and status_of(url)["load_id"] == 3
    finally:
        server.stop()


def test_no_reload_storm_when_two_models_take_turns(three_models, tmp_path):
    """A chat model and a completion model used in turn: 2 loads in 8 requests, not 8.
    Ollama's options.num_ctx under the model's context is served as is, no reload."""
    server = start_serve(None, tmp_path)
    url, client = server.base_url, openai_client(server)
    try:
        for _ in range(4):
            assert chat(client, Q8) == Q8
            done = client.completions.create(model=Q4, prompt="def f(", max_tokens=3)
            assert done.model == Q4
        assert status_of(url)["load_id"] == 2
        assert ps_names(url) == sorted([Q8, Q4])
        small = ollama.Client(host=url).generate(
            model=Q8, prompt="x", options={"num_ctx": 128, "num_predict": 2}
        )
        assert small.done and status_of(url)["load_id"] == 2
    finally:
        server.stop()


@pytest.mark.parametrize(
    "limit",
    [("--max-models", "2"),
     ("--memory-budget", str(24 / 1024))],  # 24 MiB: two tiny models (8-10 MiB), not three
    ids=["count", "memory"],
)  # fmt: skip
def test_the_least_recently_used_idle_model_makes_room(three_models, tmp_path, limit):
    """Past the count or the memory budget, a third model evicts the idle model used
    least recently."""
    server = start_serve(None, tmp_path, *limit)
    url, client = server.base_url, openai_client(server)
    try:
        for model in (Q8, Q4, Q8):  # Q4 is now the least recently used
            assert chat(client, model) == model
        assert chat(client, F16) == F16
        assert ps_names(url) == sorted([Q8, F16])
        assert f"evicting {Q4}" in server.log_text()
        assert "estimated" in server.log_text() and "measured" in server.log_text()
    finally:
        server.stop()


def test_a_busy_model_is_never_evicted(three_models, tmp_path):
    """The least recently used model is streaming: the third model evicts the idle one
    instead, and the stream runs on without an error."""
    server = start_serve(None, tmp_path, "--max-models", "2", ctx=LONG_CTX, parallel=2)
    url, client = server.base_url, openai_client(server)
    try:
        assert chat(client, Q4) == Q4
        with long_stream(url, Q8) as chunks:
            assert chat(client, Q4) == Q4  # Q8, streaming, is now the least recent
            busy = {m["info"]["id"]: m["busy_slots"] for m in status_of(url)["models"]}
            assert busy[Q8] == 1
            assert chat(client, F16) == F16
            assert ps_names(url) == sorted([Q8, F16])
            later = [next(chunks) for _ in range(5)]
            assert not any("error" in c for c in later)
            assert all(c["choices"][0]["finish_reason"] is None for c in later)
    finally:
        server.stop()


def test_a_load_past_the_queue_bound_is_a_503_with_retry_after(three_models, tmp_path):
    """With room for one model, busy streaming, a request for another waits its bound
    (--load-queue-timeout) and is answered 503 with Retry-After, in OpenAI's and
    Ollama's own error shapes; the busy model's stream is untouched."""
    server = start_serve(None, tmp_path, "--max-models", "1", "--load-queue-timeout", "1",
                         ctx=LONG_CTX, parallel=2)  # fmt: skip
    url, client = server.base_url, openai_client(server)
    try:
        with long_stream(url, Q8) as chunks:
            started = time.monotonic()
            with pytest.raises(openai.APIStatusError) as refused:
                chat(client, Q4)
            assert 0.9 < time.monotonic() - started < 10
            assert refused.value.status_code == 503
            assert refused.value.response.headers["Retry-After"].isdigit()
            error = refused.value.response.json()["error"]
            assert error["code"] == "models_busy" and Q8 in error["message"]

            raw = httpx.post(f"{url}/api/generate", json={"model": Q4, "prompt": "x"}, timeout=30)
            assert raw.status_code == 503 and raw.headers["Retry-After"].isdigit()
            assert isinstance(raw.json()["error"], str)  # Ollama's shape: a plain string
            with pytest.raises(ollama.ResponseError) as ollama_refused:
                ollama.Client(host=url).generate(model=Q4, prompt="x")
            assert ollama_refused.value.status_code == 503

            assert (
                "load of hearth-tiny-Q4_K_M waits for memory held by busy models: "
                f"{Q8}" in server.log_text()
            )
            assert not any("error" in c for c in (next(chunks) for _ in range(3)))
        assert ps_names(url) == [Q8]
    finally:
        server.stop()


def test_keep_alive_zero_unloads_only_its_model(three_models, tmp_path):
    """Ollama's keep_alive 0 on one model unloads that model alone, once it is idle; LM
    Studio's ttl sets its own model's idle time too."""
    server = start_serve(None, tmp_path)
    url = server.base_url
    ollama_client = ollama.Client(host=url)
    try:
        for model in (Q8, Q4):
            assert ollama_client.generate(model=model, prompt="x", options={"num_predict": 2}).done
        assert ps_names(url) == sorted([Q8, Q4])
        openai_client(server).completions.create(model=Q4, prompt="x", max_tokens=2,
                                           extra_body={"ttl": 30})  # fmt: skip
        expires = {m["info"]["id"]: m["expires_at"] - time.time() for m in status_of(url)["models"]}
        assert 20 < expires[Q4] <= 30 and 300 < expires[Q8] <= 600  # the JIT TTL
        with httpx.stream("GET", f"{url}/hearth/v1/events", params={"follow": "true"},
                          timeout=30) as events:  # fmt: skip
            ollama_client.generate(model=Q8, prompt="", keep_alive=0)
            unloaded = False
            for line in events.iter_lines():
                if not line.startswith("data: "):
                    continue
                state = json.loads(line[6:])
                if state["state"] == "unloading":
                    assert state["model"] == Q8
                    unloaded = True
                elif unloaded and state["state"] == "ready":
                    assert state["model"] == Q4
                    break
        assert ps_names(url) == [Q4]
        unload = httpx.post(f"{url}/hearth/v1/unload", json={"model": Q4})
        assert unload.status_code == 200 and unload.json()["state"] == "idle"
        assert ps_names(url) == []
    finally:
        server.stop()


def test_an_admin_load_waits_for_a_busy_model_then_takes_its_place(three_models, tmp_path):
    """With room for one model, busy streaming, the user's load of another waits (still
    "loading"); once the stream ends, the idle model is evicted and the load completes."""
    server = start_serve(None, tmp_path, "--max-models", "1", ctx=LONG_CTX, parallel=2)
    url = server.base_url
    try:
        with httpx.stream("GET", f"{url}/hearth/v1/events", params={"follow": "true"},
                          timeout=60) as events:  # fmt: skip
            states = (json.loads(line[6:]) for line in events.iter_lines()
                      if line.startswith("data: "))  # fmt: skip
            with long_stream(url, Q8):
                started = httpx.post(f"{url}/hearth/v1/load", json={"model": Q4})
                assert started.status_code == 202 and started.json()["state"] == "loading"
                while (state := next(states))["state"] != "loading" or state["model"] != Q4:
                    pass
                deadline = time.monotonic() + 30
                while status_of(url)["load_queue"] != 1:  # its first attempt found no room
                    assert time.monotonic() < deadline
                assert ps_names(url) == [Q8]
            # The stream is closed: its slot frees, and the waiting load goes ahead.
            while (state := next(states))["state"] != "ready":
                assert state["state"] in ("loading", "unloading"), state
            assert state["model"] == Q4
        assert ps_names(url) == [Q4]
        assert [m["pinned"] for m in status_of(url)["models"]] == [True]
    finally:
        server.stop()


async def _app_load_alongside(url: str, path: Path) -> WorkerError:
    """The app's Load alongside (``load_beside``) of ``path``: the error it fails with,
    which the app shows as the load's failure."""
    async with WorkerClient(url) as worker:
        with pytest.raises(WorkerError) as failed:
            await load_beside(worker, path, LoadOptions(), replace=False)
    return failed.value


def test_a_request_never_evicts_the_user_s_model_it_is_told_how_to_free_it(
    three_models, tiny_model_q8, tiny_model_q4km, tmp_path
):
    """`hearth serve --model Q8 --max-models 1`: a request for Q4 is refused at once in
    each dialect's shape (503, no Retry-After: waiting won't help), naming Q8 and how to
    free it; so is the admin load of Q4 alongside, before it is announced. Q8 stays and
    serves. Once Q8 is
    unloaded, Q4 loads just in time."""
    server = start_serve(tiny_model_q8, tmp_path, "--max-models", "1")
    url, client = server.base_url, openai_client(server)
    try:
        with pytest.raises(openai.APIStatusError) as refused:
            chat(client, Q4)
        assert refused.value.status_code == 503
        assert "Retry-After" not in refused.value.response.headers
        error = refused.value.response.json()["error"]
        assert error["code"] == "models_pinned"
        for words in (f"'{Q4}' can't be loaded beside '{Q8}'", "eject", "/hearth/v1/unload",
                      '"replace": true', "--max-models allows 1"):  # fmt: skip
            assert words in error["message"], words

        with pytest.raises(anthropic.APIStatusError) as claude:
            anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0).messages.create(
                model=Q4, max_tokens=3, messages=[{"role": "user", "content": "hi"}]
            )
        assert claude.value.status_code == 503
        body = claude.value.response.json()
        assert body["type"] == "error" and Q8 in body["error"]["message"]

        raw = httpx.post(f"{url}/api/generate", json={"model": Q4, "prompt": "x"}, timeout=30)
        assert raw.status_code == 503 and Q8 in raw.json()["error"]  # Ollama's plain string
        assert f"load of {Q4} refused: the pinned models {Q8}" in server.log_text()

        assert ps_names(url) == [Q8] and chat(client, Q8) == Q8
        assert [m["pinned"] for m in status_of(url)["models"]] == [True]

        alongside = httpx.post(f"{url}/hearth/v1/load", json={"model": Q4})  # the same
        assert alongside.status_code == 503
        assert alongside.json()["error"]["code"] == "models_pinned"
        assert f"beside '{Q8}'" in alongside.json()["error"]["message"]
        assert httpx.get(f"{url}/health").json() == {"status": "ok", "model": Q8}
        app_failure = asyncio.run(_app_load_alongside(url, tiny_model_q4km))
        assert app_failure.code == "models_pinned" and "Replace" in app_failure.message
        assert ps_names(url) == [Q8] and chat(client, Q8) == Q8

        assert httpx.post(f"{url}/hearth/v1/unload", json={"model": Q8}).status_code == 200
        assert chat(client, Q4) == Q4
        assert ps_names(url) == [Q4]
    finally:
        server.stop()


def test_a_user_s_load_with_replace_takes_the_pinned_model_s_place(
    three_models, tiny_model_q8, tmp_path
):
    """The way out the refusal names: the admin load with replace unloads Q8 first."""
    server = start_serve(tiny_model_q8, tmp_path, "--max-models", "1")
    url = server.base_url
    try:
        with lifecycle_events(url) as states:
            started = httpx.post(f"{url}/hearth/v1/load", json={"model": Q4, "replace": True})
            assert started.status_code == 202
            while (state := next(states))["state"] != "ready" or state["model"] != Q4:
                assert state["state"] != "error", state
        assert ps_names(url) == [Q4]
        assert [m["pinned"] for m in status_of(url)["models"]] == [True]
    finally:
        server.stop()
