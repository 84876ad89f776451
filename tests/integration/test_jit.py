"""Models from the library load just in time when a request names them, and unload idle."""

from __future__ import annotations

import json
import time

import httpx

from hearth.library.library import Library
from server_process import start_serve


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
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if httpx.get(f"{url}/hearth/v1/status").json()["state"] == "idle":
                break
            time.sleep(0.1)
        assert httpx.get(f"{url}/hearth/v1/status").json()["state"] == "idle"
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
        time.sleep(1.0)
        assert httpx.get(f"{url}/hearth/v1/status").json()["state"] == "ready"
        assert httpx.post(f"{url}/api/generate", json={**body, "keep_alive": 0}).status_code == 200
        deadline = time.monotonic() + 10
        while httpx.get(f"{url}/hearth/v1/status").json()["state"] != "idle":
            assert time.monotonic() < deadline, "keep_alive 0 did not unload the model"
            time.sleep(0.1)
        bad = httpx.post(f"{url}/api/generate", json={**body, "keep_alive": "soon"})
        assert bad.status_code == 400
        again = httpx.post(f"{url}/api/generate", json={**body, "keep_alive": -1}, timeout=60)
        assert again.status_code == 200  # loaded again on demand, and now kept
    finally:
        server.stop()


def test_keep_alive_zero_waits_for_requests_in_flight(tiny_model_q8, tmp_path):
    """keep_alive 0 unloads when idle, never under a running stream or embedding; a
    request that arrives during the unload waits for it and reloads the model."""
    import concurrent.futures

    server = start_serve(tiny_model_q8, tmp_path, "--no-jit")
    url = server.base_url
    stream_body = {"prompt": "x", "max_tokens": 300, "stream": True, "logit_bias": {"2": -100}}

    def long_stream() -> tuple[int, str | None]:
        finish = None
        with httpx.stream("POST", f"{url}/v1/completions", json=stream_body, timeout=60) as r:
            for line in r.iter_lines():
                if line.startswith("data: {"):
                    finish = json.loads(line[6:])["choices"][0]["finish_reason"] or finish
            return r.status_code, finish

    def embeddings() -> list[int]:
        return [
            httpx.post(
                f"{url}/v1/embeddings", json={"input": ["a b c"] * 4}, timeout=60
            ).status_code
            for _ in range(20)
        ]

    try:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            streaming = pool.submit(long_stream)
            embedding = [pool.submit(embeddings) for _ in range(2)]
            time.sleep(0.2)
            unload = {"model": "hearth-tiny-Q8_0", "prompt": "", "keep_alive": 0}
            assert httpx.post(f"{url}/api/generate", json=unload).status_code == 200
            assert streaming.result() == (200, "length")  # all 300 tokens, no error
            assert {code for job in embedding for code in job.result()} == {200}
        deadline = time.monotonic() + 10
        while httpx.get(f"{url}/hearth/v1/status").json()["state"] != "idle":
            assert time.monotonic() < deadline, "keep_alive 0 did not unload the idle model"
            time.sleep(0.05)
        again = httpx.post(f"{url}/v1/completions", json={"prompt": "x", "max_tokens": 2})
        assert again.status_code == 200  # reloaded for it
    finally:
        server.stop()
