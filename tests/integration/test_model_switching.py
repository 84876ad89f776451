"""Loading another model into a running worker: progress events, errors, cancel."""

from __future__ import annotations

import json
import threading

import httpx
import pytest

from hearth.core.errors import LoadCancelledError
from hearth.core.model_info import LoadConfig
from hearth.engine.model import LlamaModel
from server_process import start_serve


def events(url: str) -> list[dict]:
    with httpx.stream("GET", f"{url}/hearth/v1/events", timeout=60) as response:
        return [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]


def test_switch_models_with_progress_and_errors(tiny_model_q8, tiny_model_q4km, tmp_path):
    server = start_serve(tiny_model_q8, tmp_path, parallel=1)
    url = server.base_url
    try:
        started = httpx.post(f"{url}/hearth/v1/load", json={"model": str(tiny_model_q4km)})
        assert started.status_code == 202
        assert started.json()["state"] in ("loading", "ready")
        seen = events(url)
        assert seen[-1]["state"] == "ready" and seen[-1]["model"] == "hearth-tiny-Q4_K_M"
        models = httpx.get(f"{url}/v1/models").json()["data"]
        assert [m["id"] for m in models] == ["hearth-tiny-Q4_K_M"]
        reply = httpx.post(f"{url}/v1/completions", json={"prompt": "hi", "max_tokens": 3})
        assert reply.status_code == 200

        missing = httpx.post(f"{url}/hearth/v1/load", json={"model": str(tmp_path / "no.gguf")})
        assert missing.status_code == 400 and "No such model file" in missing.text

        broken = tmp_path / "broken.gguf"
        broken.write_bytes(tiny_model_q8.read_bytes()[:40_000])
        assert httpx.post(f"{url}/hearth/v1/load", json={"model": str(broken)}).status_code == 202
        final = events(url)[-1]
        assert final["state"] == "error" and "broken.gguf" in final["error"]
        health = httpx.get(f"{url}/health")
        assert health.status_code == 503 and health.json()["status"] == "error"
        refused = httpx.post(f"{url}/v1/completions", json={"prompt": "hi", "max_tokens": 3})
        assert refused.status_code == 503

        assert (
            httpx.post(f"{url}/hearth/v1/load", json={"model": str(tiny_model_q8)}).status_code
            == 202
        )
        assert events(url)[-1]["state"] == "ready"
        assert httpx.post(f"{url}/hearth/v1/unload").json()["state"] == "idle"
        assert httpx.get(f"{url}/v1/models").json()["data"] == []
    finally:
        server.stop()


def test_load_is_cancellable(tiny_model_f16):
    cancel = threading.Event()
    progress: list[float] = []

    def on_progress(fraction: float) -> None:
        progress.append(fraction)
        cancel.set()  # the user pressed Cancel as soon as the load began

    with pytest.raises(LoadCancelledError):
        LlamaModel(
            LoadConfig(model_path=tiny_model_f16, n_ctx=256, use_mmap=False),
            on_progress=on_progress,
            cancel=cancel,
        )
    assert progress and progress[-1] < 1.0


def test_web_pages_are_refused(serve_q8):
    response = httpx.post(
        f"{serve_q8.base_url}/v1/completions",
        content=b'{"prompt": "hi"}',
        headers={"Origin": "https://evil.example", "Content-Type": "text/plain"},
    )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden_origin"
