"""The app's engine tests (``/hearth/v1/engines/.../test``): bad input is a clear 4xx
in OpenAI's error shape, never a 5xx; a saved engine is tested with its stored key;
an engine that does not answer is ``ok: false`` with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from hearth.config.engines import EngineRegistry
from hearth.config.secrets import StoreChoice, open_store
from hearth.server.engines_routes import engines_router
from hearth.server.errors import install_error_handlers
from hearth.supervisor.client_types import error_from_body
from hearth.supervisor.engines_api import parse_engine_test
from server_process import free_port


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TestClient:
    monkeypatch.setenv("HEARTH_SECRET_STORE", "file")
    registry = EngineRegistry(tmp_path / "engines.json", open_store(StoreChoice.FILE))
    registry.add("dead", f"http://127.0.0.1:{free_port()}", api_key="sk-dead-key")
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(engines_router(registry))
    return TestClient(app)


def test_bad_input_is_a_clear_4xx(client: TestClient) -> None:
    bad_url = client.post("/hearth/v1/engines/test", json={"name": "gpu", "url": "ftp://x"})
    assert bad_url.status_code == 400
    assert bad_url.json()["error"]["message"] == "'ftp://x' is not an http:// or https:// URL."
    bad_name = client.post("/hearth/v1/engines/test", json={"name": "GPU box", "url": "http://x"})
    assert bad_name.status_code == 400 and "cannot name an engine" in bad_name.text
    extra = client.post("/hearth/v1/engines/test", json={"name": "a", "url": "http://x", "z": 1})
    assert extra.status_code == 400
    unknown = client.post("/hearth/v1/engines/nope/test")
    assert unknown.status_code == 404
    error = error_from_body(unknown.status_code, unknown.content)
    assert error.message == "No engine named 'nope'." and error.code == "engine_not_found"


def test_an_engine_that_does_not_answer_says_why(client: TestClient) -> None:
    saved = client.post("/hearth/v1/engines/dead/test")
    assert saved.status_code == 200
    result = parse_engine_test(saved.json())
    assert result.engine == "dead" and not result.ok and result.models == ()
    assert result.error is not None and result.error.startswith("cannot connect")
    assert "sk-dead-key" not in saved.text
    draft = client.post(
        "/hearth/v1/engines/test",
        json={"name": "dead", "url": "http://127.0.0.1:9/v1", "use_saved_key": True},
    )
    assert draft.status_code == 200 and draft.json()["ok"] is False
