"""``hearth serve`` as a user runs it: keys, refusals, bad files."""

from __future__ import annotations

import subprocess
import sys

import httpx

from server_process import start_serve


def test_api_key_required_when_given(tiny_model_q8, tmp_path):
    server = start_serve(tiny_model_q8, tmp_path, api_key="sekret", parallel=1)
    try:
        url = server.base_url
        assert httpx.get(f"{url}/health").status_code == 200  # health stays public
        denied = httpx.get(f"{url}/v1/models")
        assert denied.status_code == 401
        assert denied.json()["error"]["code"] == "invalid_api_key"
        wrong = httpx.get(f"{url}/v1/models", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        ok = httpx.get(f"{url}/v1/models", headers=server.headers())
        assert ok.status_code == 200
        assert "sekret" not in server.log_text()
    finally:
        server.stop()


def test_refuses_lan_without_key(tiny_model_q8):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "hearth",
            "serve",
            "--model",
            str(tiny_model_q8),
            "--host",
            "0.0.0.0",
            "--port",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "--api-key" in result.stderr


def test_batch_smaller_than_slots_is_refused(tiny_model_q8):
    result = subprocess.run(
        [sys.executable, "-m", "hearth", "serve", "--model", str(tiny_model_q8),
         "--parallel", "8", "--batch", "4", "--port", "0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert "--batch must be at least --parallel" in result.stderr


def test_engine_refuses_batch_smaller_than_slots(tiny_model_q8):
    import pytest

    from hearth.core.errors import ModelLoadError
    from hearth.core.model_info import LoadConfig
    from hearth.engine.engine import Engine

    with pytest.raises(ModelLoadError, match="at least the number of parallel slots"):
        Engine().load(LoadConfig(model_path=tiny_model_q8, n_ctx=64, n_parallel=8, n_batch=4))


def test_corrupt_model_exits_with_clear_message(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"this is not a model")
    result = subprocess.run(
        [sys.executable, "-m", "hearth", "serve", "--model", str(bad), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "not a GGUF model file" in result.stderr
    assert "Traceback" not in result.stderr


def test_truncated_gguf_is_a_clear_error(tmp_path, tiny_model_q8):
    bad = tmp_path / "truncated.gguf"
    bad.write_bytes(tiny_model_q8.read_bytes()[:50_000])
    result = subprocess.run(
        [sys.executable, "-m", "hearth", "serve", "--model", str(bad), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "could not load truncated.gguf" in result.stderr
    assert "Traceback" not in result.stderr


def test_worker_announces_port_and_reports_load_progress(tiny_model_q8):
    import json
    import os
    import time

    env = dict(os.environ, HEARTH_WORKER_TOKEN="tok")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hearth",
            "--worker",
            "--model",
            str(tiny_model_q8),
            "--ctx",
            "256",
            "--parallel",
            "1",
            "--private",  # as the GUI starts it with its endpoint off: only the token
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    try:
        line = json.loads(process.stdout.readline())
        assert line["event"] == "listening" and line["port"] > 0
        url = f"http://127.0.0.1:{line['port']}"
        deadline = time.monotonic() + 60
        seen = set()
        while time.monotonic() < deadline:
            body = httpx.get(f"{url}/health").json()
            seen.add(body["status"])
            if body["status"] == "ok":
                break
            time.sleep(0.02)
        assert "ok" in seen
        assert httpx.get(f"{url}/v1/models").status_code == 401
        models = httpx.get(f"{url}/v1/models", headers={"Authorization": "Bearer tok"})
        assert models.json()["data"][0]["id"] == "hearth-tiny-Q8_0"
    finally:
        process.terminate()
        assert process.wait(timeout=15) == 0


def test_queue_full_is_503_with_retry_after(tiny_model_q8, tmp_path):
    server = start_serve(tiny_model_q8, tmp_path, "--max-queue", "1", parallel=1, ctx=4096)
    body = {
        "prompt": "busy",
        "max_tokens": 4000,
        "stream": True,
        "logit_bias": {"2": -100, "260": -100},
    }
    try:
        with (
            httpx.Client(base_url=server.base_url, timeout=30) as client,
            client.stream("POST", "/v1/completions", json=body) as running,
        ):
            lines = running.iter_lines()  # keep a reference: closing it disconnects
            next(lines)  # the first request now holds the only slot
            with client.stream("POST", "/v1/completions", json=body) as queued:
                assert queued.status_code == 200  # accepted, waiting for the slot
                refused = httpx.post(f"{server.base_url}/v1/completions", json=body)
                assert refused.status_code == 503
                assert refused.headers["retry-after"] == "1"
                assert refused.json()["error"]["code"] == "server_busy"
        assert httpx.get(f"{server.base_url}/health").json()["status"] == "ok"
    finally:
        server.stop()
