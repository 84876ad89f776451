"""A load, or a request that loads a model, arriving while an unload runs waits for it
and then loads, as Ollama queues it; only a different load really in flight is a 409."""

from __future__ import annotations

import json

import httpx

from hearth.library.library import Library
from server_process import start_serve


def settle(url: str, timeout: float = 60) -> list[dict]:
    """The pushed states from now until the lifecycle settles (ready, idle or error)."""
    with httpx.stream("GET", f"{url}/hearth/v1/events", timeout=timeout) as response:
        return [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]


def _ollama_chat(url: str, model: str, **extra: object) -> httpx.Response:
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": False,
            "options": {"num_predict": 2}, **extra}  # fmt: skip
    return httpx.post(f"{url}/api/chat", json=body, timeout=60)


def test_a_load_right_after_keep_alive_zero_waits_for_the_unload(tiny_model_q8, tmp_path):
    """The issue's repro: load, a chat with keep_alive 0, load again at once. The
    second load used to be refused (409 "already loading") while the unload ran."""
    Library().import_in_place(tiny_model_q8)
    server = start_serve(None, tmp_path)
    url = server.base_url
    load = {"model": "hearth-tiny-Q8_0"}
    try:
        assert httpx.post(f"{url}/hearth/v1/load", json=load).status_code == 202
        first = settle(url)[-1]
        assert first["state"] == "ready"
        assert _ollama_chat(url, "hearth-tiny-Q8_0", keep_alive=0).status_code == 200
        again = httpx.post(f"{url}/hearth/v1/load", json=load)
        assert again.status_code == 202, again.text
        assert again.json()["state"] in ("loading", "ready")
        assert again.json()["model"] == "hearth-tiny-Q8_0"
        seen = settle(url)
        assert [s["state"] for s in seen if s["state"] in ("idle", "error")] == [], seen
        assert seen[-1]["state"] == "ready" and seen[-1]["load_id"] == first["load_id"] + 1
        assert _ollama_chat(url, "hearth-tiny-Q8_0").status_code == 200
    finally:
        server.stop()


def test_requests_arriving_during_an_unload_load_their_model(
    tiny_model_q8, tiny_model_q4km, tmp_path
):
    """A request naming the model being unloaded, or another library model, that
    arrives while keep_alive 0 unloads waits for the unload and loads its model; the
    state never settles as idle in between."""
    library = Library()
    library.import_in_place(tiny_model_q8)
    library.import_in_place(tiny_model_q4km)
    server = start_serve(None, tmp_path)
    url = server.base_url
    chat = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    try:
        for model in ("hearth-tiny-Q8_0", "hearth-tiny-Q4_K_M"):
            assert _ollama_chat(url, "hearth-tiny-Q8_0").status_code == 200
            before = httpx.get(f"{url}/hearth/v1/status").json()["load_id"]
            assert _ollama_chat(url, "hearth-tiny-Q8_0", keep_alive=0).status_code == 200
            reply = httpx.post(
                f"{url}/v1/chat/completions", json={**chat, "model": model}, timeout=60
            )
            assert reply.status_code == 200, reply.text
            assert reply.json()["model"] == model
            status = httpx.get(f"{url}/hearth/v1/status").json()
            assert status["state"] == "ready" and status["model"] == model
            assert status["load_id"] == before + 1
    finally:
        server.stop()


def test_only_a_different_load_in_flight_is_refused(tiny_model_q8, tiny_model_q4km, tmp_path):
    """While a load runs, asking for the same load again joins it (202); asking for
    another model is a 409 that names the one loading."""
    library = Library()
    library.import_in_place(tiny_model_q8)
    library.import_in_place(tiny_model_q4km)
    server = start_serve(None, tmp_path)
    url = server.base_url
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            first = client.post("/hearth/v1/load", json={"model": "hearth-tiny-Q8_0"})
            same = client.post("/hearth/v1/load", json={"model": "hearth-tiny-Q8_0"})
            other = client.post("/hearth/v1/load", json={"model": "hearth-tiny-Q4_K_M"})
        assert first.status_code == 202 and same.status_code == 202
        assert same.json()["model"] == "hearth-tiny-Q8_0"
        assert other.status_code == 409, other.text
        error = other.json()["error"]
        assert error["code"] == "busy"
        assert "'hearth-tiny-Q8_0' is loading" in error["message"]
        assert "hearth-tiny-Q4_K_M" in error["message"]
        seen = settle(url)
        assert seen[-1]["state"] == "ready" and seen[-1]["model"] == "hearth-tiny-Q8_0"
        assert seen[-1]["load_id"] == 1  # joined: one load, not two
    finally:
        server.stop()
