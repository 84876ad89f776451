"""The live request log of a real ``hearth serve``: every request with its HTTP status,
generations joined with their tokens and speed; never a key or a body."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest

from server_process import ServeProcess, start_serve

KEY = "hk-request-log-test-key-0123456789"
MODEL = "hearth-tiny-Q8_0"


@pytest.fixture(scope="module")
def keyed_server(tiny_model_q8: Path, tmp_path_factory: pytest.TempPathFactory):
    server = start_serve(
        tiny_model_q8, tmp_path_factory.mktemp("request-log"), api_key=KEY, parallel=2
    )
    yield server
    server.stop()


def _log(server: ServeProcess, limit: int = 50) -> dict:
    response = httpx.get(
        f"{server.base_url}/hearth/v1/requests", params={"limit": limit}, headers=server.headers()
    )
    assert response.status_code == 200
    return response.json()


def test_good_and_bad_requests_appear_with_their_status(keyed_server: ServeProcess) -> None:
    server, base = keyed_server, keyed_server.base_url
    auth = server.headers()
    before = {e["id"] for e in _log(server)["requests"]}

    good = httpx.post(
        f"{base}/v1/chat/completions?trace=secret-query",
        json={"model": MODEL, "messages": [{"role": "user", "content": "secret-body"}],
              "max_tokens": 5, "temperature": 0},
        headers=auth, timeout=60,
    )  # fmt: skip
    assert good.status_code == 200
    usage = good.json()["usage"]
    no_key = httpx.post(f"{base}/v1/chat/completions", json={"model": MODEL})
    assert no_key.status_code == 401
    bad = httpx.post(
        f"{base}/v1/chat/completions",
        json={"model": MODEL, "messages": [], "max_tokens": -3},
        headers=auth,
    )
    assert bad.status_code == 400
    missing = httpx.get(f"{base}/v1/no-such-route", headers=auth)
    assert missing.status_code == 404

    log = _log(server)
    assert log["model"] == MODEL
    new = [e for e in log["requests"] if e["id"] not in before]
    assert [(e["method"], e["path"], e["status"]) for e in new] == [
        ("GET", "/v1/no-such-route", 404),
        ("POST", "/v1/chat/completions", 400),
        ("POST", "/v1/chat/completions", 401),
        ("POST", "/v1/chat/completions", 200),
    ]  # newest first; the log's own GETs are not listed when they succeed
    ok = new[-1]
    assert ok["model"] == MODEL and ok["finish_reason"] in ("stop", "length")
    assert ok["prompt_tokens"] == usage["prompt_tokens"]
    assert ok["completion_tokens"] == usage["completion_tokens"]
    assert ok["ttft_ms"] >= 0 and ok["decode_tokens_per_s"] >= 0
    assert ok["duration_ms"] > 0 and ok["finished_at"] >= ok["started_at"]
    assert ok["client"] == "127.0.0.1"
    assert ok["request_id"] == good.headers["x-request-id"]  # joined by the edge's id
    for failed in new[:-1]:
        assert failed["completion_tokens"] is None and failed["finish_reason"] is None
    assert new[-2]["request_id"] == no_key.headers["x-request-id"] != ok["request_id"]
    text = httpx.get(f"{base}/hearth/v1/requests", headers=auth).text
    assert KEY not in text and "secret-body" not in text and "secret-query" not in text


def test_the_log_needs_the_key_and_records_the_refusal(keyed_server: ServeProcess) -> None:
    refused = httpx.get(f"{keyed_server.base_url}/hearth/v1/requests")
    assert refused.status_code == 401
    newest = _log(keyed_server)["requests"][0]
    assert (newest["path"], newest["status"]) == ("/hearth/v1/requests", 401)


def test_streams_and_concurrent_generations_each_get_their_own_tokens(
    keyed_server: ServeProcess,
) -> None:
    server, base = keyed_server, keyed_server.base_url
    before = {e["id"] for e in _log(server)["requests"]}
    counts: dict[str, int] = {}

    def ollama(n: int) -> None:
        r = httpx.post(
            f"{base}/api/generate",
            json={"model": MODEL, "prompt": f"count {n}", "stream": False,
                  "options": {"num_predict": n, "temperature": 0}},
            headers=server.headers(), timeout=120,
        )  # fmt: skip
        assert r.status_code == 200
        counts[f"ollama-{n}"] = r.json()["eval_count"]

    def stream(n: int) -> None:
        with httpx.stream(
            "POST", f"{base}/v1/completions",
            json={"model": MODEL, "prompt": f"stream {n}", "max_tokens": n, "stream": True,
                  "stream_options": {"include_usage": True}},
            headers=server.headers(), timeout=120,
        ) as r:  # fmt: skip
            assert r.status_code == 200
            usage = None
            for line in r.iter_lines():
                if line.startswith("data: {") and '"usage":{' in line.replace(" ", ""):
                    usage = httpx.Response(200, content=line[6:]).json()["usage"]
            assert usage is not None
            counts[f"stream-{n}"] = usage["completion_tokens"]

    threads = [threading.Thread(target=ollama, args=(3,)),
               threading.Thread(target=stream, args=(40,))]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(counts) == 2, counts
    new = [e for e in _log(server)["requests"] if e["id"] not in before]
    by_path = {e["path"]: e for e in new}
    assert set(by_path) == {"/api/generate", "/v1/completions"}
    assert all(e["status"] == 200 for e in new)
    assert by_path["/api/generate"]["completion_tokens"] == counts["ollama-3"]
    assert by_path["/v1/completions"]["completion_tokens"] == counts["stream-40"]
