"""Loading another model into a running worker: progress events, errors, cancel."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import httpx
import pytest

from hearth.core.errors import LoadCancelledError
from hearth.core.model_info import LoadConfig
from hearth.engine.model import LlamaModel
from hearth.library.library import Library
from server_process import start_serve


def events(url: str) -> list[dict]:
    with httpx.stream("GET", f"{url}/hearth/v1/events", timeout=60) as response:
        return [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]


def test_switch_models_with_progress_and_errors(tiny_model_q8, tiny_model_q4km, tmp_path):
    library = Library()
    library.import_in_place(tiny_model_q4km)
    server = start_serve(tiny_model_q8, tmp_path, parallel=1)
    url = server.base_url
    try:
        first_load = httpx.get(f"{url}/hearth/v1/status").json()["load_id"]
        started = httpx.post(f"{url}/hearth/v1/load", json={"model": "hearth-tiny-Q4_K_M"})
        assert started.status_code == 202
        assert started.json()["state"] in ("loading", "ready")
        seen = events(url)
        assert seen[-1]["state"] == "ready" and seen[-1]["model"] == "hearth-tiny-Q4_K_M"
        assert seen[-1]["load_id"] == first_load + 1
        models = httpx.get(f"{url}/v1/models").json()["data"]
        assert models[0]["id"] == "hearth-tiny-Q4_K_M" and models[0]["meta"]["loaded"]
        reply = httpx.post(f"{url}/v1/completions", json={"prompt": "hi", "max_tokens": 3})
        assert reply.status_code == 200

        # A bad setting fails that load alone (it used to poison every later one).
        bad = {"model": "hearth-tiny-Q4_K_M", "cache_type_k": "q3"}
        assert httpx.post(f"{url}/hearth/v1/load", json=bad).status_code == 202
        final = events(url)[-1]
        assert final["state"] == "error" and "q3" in final["error"]
        health = httpx.get(f"{url}/health")  # Q8 still serves: healthy, the failure its load's
        assert health.status_code == 200 and health.json()["model"] == "hearth-tiny-Q8_0"
        assert health.json()["load"]["state"] == "error" and "q3" in health.json()["load"]["error"]

        # The model the server started with is still known by name.
        assert (
            httpx.post(f"{url}/hearth/v1/load", json={"model": "hearth-tiny-Q8_0"}).status_code
            == 202
        )
        assert events(url)[-1]["state"] == "ready"
        chat = {"model": "hearth-tiny-Q4_K_M", "prompt": "hi", "max_tokens": 2}
        assert httpx.post(f"{url}/v1/completions", json=chat, timeout=60).status_code == 200
        assert httpx.post(f"{url}/hearth/v1/unload").json()["state"] == "idle"
        assert not any(m["meta"]["loaded"] for m in httpx.get(f"{url}/v1/models").json()["data"])
    finally:
        server.stop()


def test_admin_load_is_no_file_oracle(tiny_model_q8, tmp_path):
    """Paths outside the library are refused with one message, whether the file exists
    (even a real GGUF) or not."""
    outside = tmp_path / "elsewhere.gguf"
    outside.write_bytes(tiny_model_q8.read_bytes())
    server = start_serve(tiny_model_q8, tmp_path, parallel=1)
    url = server.base_url
    try:
        paths = (outside, tmp_path / "missing.gguf", Path("/etc/passwd"))
        answers = [httpx.post(f"{url}/hearth/v1/load", json={"model": str(p)}) for p in paths]
        assert {a.status_code for a in answers} == {404}
        messages = {
            a.json()["error"]["message"].replace(str(p), "PATH")
            for a, p in zip(answers, paths, strict=True)
        }
        assert len(messages) == 1  # the same words whether the file exists or not
        assert "'PATH' is not a model in the library" in messages.pop()
        assert httpx.get(f"{url}/health").json()["model"] == "hearth-tiny-Q8_0"
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


def test_admin_load_settings_are_load_configs_own(tiny_model_q8, tmp_path):
    """The settings of POST /hearth/v1/load are LoadConfig's fields, checked by its
    rules: unknown names, wrong types and bad values are 400s naming them."""
    server = start_serve(tiny_model_q8, tmp_path, parallel=1)
    url = server.base_url
    try:
        for body, words in (
            ({"n_ctx_size": 512}, "Unknown load setting 'n_ctx_size'"),
            ({"n_ctx": "big"}, "n_ctx"),
            ({"n_ctx": 8}, "n_ctx must be at least 16"),
            ({"flash_attention": "sometimes"}, "flash_attention"),
        ):
            answer = httpx.post(
                f"{url}/hearth/v1/load", json={"model": "hearth-tiny-Q8_0", **body}
            )
            assert answer.status_code == 400, body
            assert words in answer.json()["error"]["message"]
        good = {"model": "hearth-tiny-Q8_0", "n_ctx": 256, "flash_attention": "off"}
        assert httpx.post(f"{url}/hearth/v1/load", json=good).status_code == 202
        assert events(url)[-1]["state"] == "ready"
        slots = httpx.get(f"{url}/hearth/v1/status").json()["slots"]
        assert len(slots) == 1
    finally:
        server.stop()
