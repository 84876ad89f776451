"""``hearth serve --draft-model NAME``: a library model drafts by its name, end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from hearth.library.library import Library
from server_process import start_serve


def test_serve_loads_a_draft_model_named_in_the_library(
    spec_models: dict[str, Path], tmp_path: Path
) -> None:
    Library().import_in_place(spec_models["draft"])
    server = start_serve(spec_models["target"], tmp_path, "--draft-model", "draft-Q8_0")
    try:
        reply = httpx.post(
            f"{server.base_url}/v1/completions",
            json={"prompt": "Hello world, the cat is", "max_tokens": 24, "temperature": 0},
            timeout=60,
        )
        assert reply.status_code == 200, reply.text
        timings = reply.json()["timings"]
        assert timings["draft_tokens"] > 0  # the named draft model drafted
        assert timings["accepted_tokens"] > 0
        assert "draft-Q8_0.gguf" in server.log_text()
    finally:
        server.stop()


def test_serve_refuses_an_unknown_draft_name_before_loading(tiny_model_q8: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hearth", "serve", "--model", str(tiny_model_q8),
         "--draft-model", "no-such-draft", "--port", "0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--draft-model no-such-draft" in done.stderr
    assert "no model of that name in the library" in done.stderr
