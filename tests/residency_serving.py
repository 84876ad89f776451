"""What the tests of several models in one `hearth serve` share: three tiny models in
the library, their names, a stream that keeps a model busy, and the lifecycle's pushed
states."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import openai
import pytest

import gguf_factory as gf
from hearth.library.library import Library
from server_process import ServeProcess

F16, Q8, Q4 = "hearth-tiny-F16", "hearth-tiny-Q8_0", "hearth-tiny-Q4_K_M"
BROKEN = "hearth-broken"


@pytest.fixture
def three_models(tiny_model_f16: Path, tiny_model_q8: Path, tiny_model_q4km: Path) -> None:
    library = Library()
    for path in (tiny_model_f16, tiny_model_q8, tiny_model_q4km):
        library.import_in_place(path)


@pytest.fixture
def broken_model(tmp_path: Path) -> Path:
    """A library model llama.cpp refuses at load: a well-formed GGUF (the library lists
    it, its memory estimate reads) with a tensor of the wrong shape."""
    path = gf.write_llama(tmp_path / "models" / f"{BROKEN}.gguf", gf.LlamaSpec(), gf.VOCAB,
                          name=BROKEN, weights={"output_norm.weight": np.ones(7)})  # fmt: skip
    Library().import_in_place(path)
    return path


def status_of(url: str) -> dict:
    return httpx.get(f"{url}/hearth/v1/status").json()


def ps_names(url: str) -> list[str]:
    return sorted(
        m["name"].removesuffix(":latest") for m in httpx.get(f"{url}/api/ps").json()["models"]
    )


def openai_client(server: ServeProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.base_url}/v1", api_key="unused", max_retries=0)


def chat(client: openai.OpenAI, model: str) -> str:
    reply = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "hi"}], max_tokens=3
    )
    return reply.model


# Enough tokens to outlast a test's waits (seconds) on a fast machine: the servers that
# hold such a stream have LONG_CTX per slot.
LONG_TOKENS, LONG_CTX = 8000, 8192


@contextlib.contextmanager
def long_stream(url: str, model: str) -> Iterator[Iterator[dict]]:
    """A streamed completion on ``model`` that runs until the block ends (no end of
    text, far more tokens than the test needs): its chunks, once the first has come."""
    body = {"model": model, "prompt": "x", "max_tokens": LONG_TOKENS, "stream": True,
            "logit_bias": {"2": -100}}  # fmt: skip
    with httpx.stream("POST", f"{url}/v1/completions", json=body, timeout=120) as response:
        assert response.status_code == 200

        def chunks() -> Iterator[dict]:
            for line in response.iter_lines():
                if line.startswith("data: {"):
                    yield json.loads(line[6:])

        stream = chunks()
        first = next(stream)
        assert "error" not in first

        def from_first() -> Iterator[dict]:
            yield first
            yield from stream

        yield from_first()


@contextlib.contextmanager
def lifecycle_events(url: str, timeout: float = 60) -> Iterator[Iterator[dict]]:
    """The lifecycle states from now on, as dicts."""
    with httpx.stream("GET", f"{url}/hearth/v1/events", params={"follow": "true"},
                      timeout=timeout) as events:  # fmt: skip
        yield (json.loads(line[6:]) for line in events.iter_lines() if line.startswith("data: "))
