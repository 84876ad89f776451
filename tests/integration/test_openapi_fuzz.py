"""/openapi.json describes the API, and a bounded schemathesis run finds no 5xx."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from server_process import start_serve


def test_openapi_document_lists_the_routes(serve_q8):
    document = httpx.get(f"{serve_q8.base_url}/openapi.json").json()
    for path in ("/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models",
                 "/api/chat", "/api/generate", "/api/tags", "/health", "/v1/messages",
                 "/v1/responses", "/infill", "/v1/infill"):  # fmt: skip
        assert path in document["paths"]
    body = document["paths"]["/v1/chat/completions"]["post"]["requestBody"]
    schema = body["content"]["application/json"]["schema"]
    assert "messages" in schema["required"]
    assert "Message" in document["components"]["schemas"]
    infill = document["paths"]["/infill"]["post"]["requestBody"]["content"]["application/json"]
    assert {"input_prefix", "input_suffix"} <= set(infill["schema"]["required"])


def test_schemathesis_finds_no_server_errors(tiny_model_q8, tmp_path):
    server = start_serve(tiny_model_q8, tmp_path, ctx=256, parallel=2)
    try:
        result = subprocess.run(
            [str(Path(sys.executable).parent / "schemathesis"), "run",
             f"{server.base_url}/openapi.json", "--checks", "not_a_server_error",
             "-n", "6", "--max-time", "40", "--request-timeout", "30",
             "--generation-deterministic",
             "--exclude-path-regex", "^/hearth/v1/(load|unload|events)"],
            capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        health = httpx.get(f"{server.base_url}/health").json()
    finally:
        server.stop()
    assert result.returncode == 0, result.stdout[-4000:]
    assert "passed" in result.stdout
    assert health["status"] == "ok"
    assert "Traceback" not in server.log_text()
