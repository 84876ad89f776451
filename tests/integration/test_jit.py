"""Models from the library load just in time when a request names them, and unload idle."""

from __future__ import annotations

import json
import threading

import httpx

from hearth.library.library import Library
from server_process import start_serve


def wait_for_state(url: str, wanted: str, timeout: float = 30) -> dict:
    """Follow the pushed state changes until the model reaches ``wanted``."""
    with httpx.stream(
        "GET", f"{url}/hearth/v1/events", params={"follow": "true"}, timeout=timeout
    ) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                state = json.loads(line[6:])
                if state["state"] == wanted:
                    return state
    raise AssertionError(f"the model never became {wanted!r}")


def _chat(url: str, model: str) -> httpx.Response:
    return httpx.post(
        f"{url}/v1/chat/completions",
        json={"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3},
        timeout=60,
    )


def test_requests_load_library_models(tiny_model_q8, tiny_model_q4km, tmp_path):
    library = Library()
    library.import_in_place(tiny_model_q8)
    library.import_in_place(tiny_model_q4km)
    server = start_serve(None, tmp_path)
    url = server.base_url
    try:
        assert httpx.get(f"{url}/health").json() == {"status": "ok", "model": None}
        listed = httpx.get(f"{url}/v1/models").json()["data"]
        assert {m["id"] for m in listed} == {"hearth-tiny-Q8_0", "hearth-tiny-Q4_K_M"}
        assert not any(m["meta"]["loaded"] for m in listed)
        assert httpx.get(f"{url}/v1/models/hearth-tiny-Q8_0").json()["meta"]["loaded"] is False

        assert _chat(url, "hearth-tiny-Q4_K_M").status_code == 200
        listed = httpx.get(f"{url}/v1/models").json()["data"]
        assert listed[0]["id"] == "hearth-tiny-Q4_K_M" and listed[0]["meta"]["loaded"]
        assert len(listed) == 2

        ollama_reply = httpx.post(
            f"{url}/api/generate",
            json={
                "model": "hearth-tiny-Q8_0:latest",
                "prompt": "x",
                "stream": False,
                "options": {"num_predict": 2},
            },
            timeout=60,
        )
        assert ollama_reply.status_code == 200
        assert httpx.get(f"{url}/health").json()["model"] == "hearth-tiny-Q8_0"

        missing = _chat(url, "llama-70b")
        assert missing.status_code == 404
        assert "hearth-tiny-Q4_K_M" in missing.json()["error"]["message"]
    finally:
        server.stop()


def test_idle_model_unloads_and_comes_back(tiny_model_q8, tmp_path):
    server = start_serve(tiny_model_q8, tmp_path, "--ttl", "1", "--no-jit")
    url = server.base_url
    try:
        assert _chat(url, "hearth-tiny-Q8_0").status_code == 200
        assert 0 < httpx.get(f"{url}/hearth/v1/status").json()["expires_in_s"] <= 1
        wait_for_state(url, "idle", timeout=10)
        assert _chat(url, "hearth-tiny-Q8_0").status_code == 200  # reloaded on demand
        assert _chat(url, "").status_code == 200  # no name: the current model
        assert httpx.get(f"{url}/health").json()["status"] == "ok"
    finally:
        server.stop()


def test_ollama_keep_alive(tiny_model_q8, tmp_path):
    from hearth.server.ollama_schemas import keep_alive_seconds

    assert keep_alive_seconds("5m") == 300 and keep_alive_seconds("30s") == 30
    assert keep_alive_seconds(0) == 0 and keep_alive_seconds(None) is None
    server = start_serve(tiny_model_q8, tmp_path, "--no-jit")
    url = server.base_url
    body = {"model": "hearth-tiny-Q8_0", "prompt": "x", "stream": False,
            "options": {"num_predict": 2}}  # fmt: skip
    try:
        assert (
            httpx.post(f"{url}/api/generate", json={**body, "keep_alive": "1h"}).status_code == 200
        )
        status = httpx.get(f"{url}/hearth/v1/status").json()
        assert status["state"] == "ready" and 3500 < status["expires_in_s"] <= 3600
        assert httpx.post(f"{url}/api/generate", json={**body, "keep_alive": 0}).status_code == 200
        wait_for_state(url, "idle", timeout=10)
        bad = httpx.post(f"{url}/api/generate", json={**body, "keep_alive": "soon"})
        assert bad.status_code == 400

        # keep_alive applies to its own request only: a plain request reloads the model,
        # just in time now (the user's load was ejected), so it has the just-in-time TTL
        # (10 minutes; this server has no --ttl), across requests, with no reload between.
        assert httpx.post(f"{url}/api/generate", json=body, timeout=60).status_code == 200
        loaded = httpx.get(f"{url}/hearth/v1/status").json()
        assert loaded["state"] == "ready" and 590 < loaded["expires_in_s"] <= 600
        assert [m["pinned"] for m in loaded["models"]] == [False]
        assert (
            httpx.post(f"{url}/v1/completions", json={"prompt": "x", "max_tokens": 2}).status_code
            == 200
        )
        assert httpx.get(f"{url}/hearth/v1/status").json()["load_id"] == loaded["load_id"]
        again = httpx.post(f"{url}/api/generate", json={**body, "keep_alive": -1}, timeout=60)
        assert again.status_code == 200
        assert httpx.get(f"{url}/hearth/v1/status").json()["expires_in_s"] is None
    finally:
        server.stop()


def test_keep_alive_zero_waits_for_requests_in_flight(tiny_model_q8, tmp_path):
    """keep_alive 0 unloads when idle, never under a running stream or embedding; a
    request that arrives during the unload waits for it and reloads the model. (Every
    request here says keep_alive 0: it applies per request, and one without it would
    restore the server's own keep-loaded default.)"""
    import concurrent.futures

    server = start_serve(tiny_model_q8, tmp_path, "--no-jit")
    url = server.base_url
    stream_body = {"prompt": "x", "max_tokens": 300, "stream": True, "logit_bias": {"2": -100}}

    streaming_started = threading.Event()

    def long_stream() -> tuple[int, str | None]:
        finish = None
        with httpx.stream("POST", f"{url}/v1/completions", json=stream_body, timeout=60) as r:
            for line in r.iter_lines():
                if line.startswith("data: {"):
                    streaming_started.set()
                    finish = json.loads(line[6:])["choices"][0]["finish_reason"] or finish
            return r.status_code, finish

    def embeddings() -> list[int]:
        return [
            httpx.post(
                f"{url}/api/embed",
                json={"model": "hearth-tiny-Q8_0", "input": ["a b c"] * 4, "keep_alive": 0},
                timeout=60,
            ).status_code
            for _ in range(20)
        ]

    try:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            streaming = pool.submit(long_stream)
            embedding = [pool.submit(embeddings) for _ in range(2)]
            assert streaming_started.wait(30)
            unload = {"model": "hearth-tiny-Q8_0", "prompt": "", "keep_alive": 0}
            assert httpx.post(f"{url}/api/generate", json=unload).status_code == 200
            assert streaming.result() == (200, "length")  # all 300 tokens, no error
            assert {code for job in embedding for code in job.result()} == {200}
        wait_for_state(url, "idle", timeout=10)
        again = httpx.post(f"{url}/v1/completions", json={"prompt": "x", "max_tokens": 2})
        assert again.status_code == 200  # reloaded for it
    finally:
        server.stop()


def test_an_unload_ends_running_streams_with_an_error(tiny_model_q8, tiny_model_q4km, tmp_path):
    """A stream cut off by its model's unload ends with an error saying why, never as a
    normal finish that a client would take for the whole answer. (A request for another
    model no longer cuts it: that model loads alongside.)"""
    library = Library()
    library.import_in_place(tiny_model_q8)
    library.import_in_place(tiny_model_q4km)
    # A context far longer than the time the unload takes to arrive: the stream can only
    # end by being cut (CI once saw a 400-token stream finish first on a fast machine).
    server = start_serve(tiny_model_q8, tmp_path, ctx=8192, parallel=2)
    url = server.base_url
    body = {"model": "hearth-tiny-Q8_0", "prompt": "x", "max_tokens": 8000, "stream": True,
            "logit_bias": {"2": -100}}  # fmt: skip
    chunks: list[dict] = []
    try:
        assert _chat(url, "hearth-tiny-Q4_K_M").status_code == 200  # loads alongside
        with httpx.stream("POST", f"{url}/v1/completions", json=body, timeout=60) as stream:
            lines = stream.iter_lines()
            for line in lines:
                if line.startswith("data: {"):
                    chunks.append(json.loads(line[6:]))
                    break
            unload = httpx.post(f"{url}/hearth/v1/unload", json={"model": "hearth-tiny-Q8_0"})
            assert unload.status_code == 200 and unload.json()["model"] == "hearth-tiny-Q4_K_M"
            for line in lines:
                if line.startswith("data: {"):
                    chunks.append(json.loads(line[6:]))
        finishes = [c["choices"][0]["finish_reason"] for c in chunks if c.get("choices")]
        assert "stop" not in finishes and "length" not in finishes
        assert "error" in chunks[-1]
        assert "unloaded" in chunks[-1]["error"]["message"]
        assert len([c for c in chunks if c.get("choices")]) < 8000  # cut short
    finally:
        server.stop()


def test_a_broken_template_never_wedges_the_server(tiny_model_q8, tmp_path):
    """A chat with a model whose template doesn't compile is a 400 naming the model;
    the next request, to another model, is answered."""
    import gguf_factory

    broken = gguf_factory.write_tiny_llama(
        tmp_path / "broken-template.gguf", chat_template="{% for x in %}"
    )
    library = Library()
    library.import_in_place(broken)
    library.import_in_place(tiny_model_q8)
    server = start_serve(None, tmp_path)
    url = server.base_url
    try:
        refused = _chat(url, "broken-template")
        assert refused.status_code == 400
        assert "broken-template" in refused.json()["error"]["message"]
        ollama = httpx.post(
            f"{url}/api/chat",
            json={"model": "broken-template", "messages": [{"role": "user", "content": "hi"}],
                  "stream": False},
            timeout=30,
        )  # fmt: skip
        assert ollama.status_code == 400 and "broken-template" in ollama.json()["error"]
        assert _chat(url, "hearth-tiny-Q8_0").status_code == 200
        assert httpx.get(f"{url}/health", timeout=5).json() == {
            "status": "ok",
            "model": "hearth-tiny-Q8_0",
        }
    finally:
        server.stop()
