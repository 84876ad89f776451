"""Embeddings through the OpenAI and Ollama routes, checked against llama-cpp-python."""

from __future__ import annotations

import math

import httpx
import llama_cpp
import ollama
import openai
import pytest

MODEL = "hearth-tiny-Q8_0"


@pytest.fixture
def client(serve_q8):
    return openai.OpenAI(base_url=f"{serve_q8.base_url}/v1", api_key="unused", max_retries=0)


def test_openai_embeddings_are_normalised_and_deterministic(client):
    texts = ["the fire is warm", "water runs down", "the fire is warm"]
    # the openai client asks for base64 by default and decodes it
    result = client.embeddings.create(model=MODEL, input=texts)
    vectors = [item.embedding for item in result.data]
    assert [item.index for item in result.data] == [0, 1, 2]
    assert all(len(v) == 256 for v in vectors)
    assert all(abs(math.hypot(*v) - 1.0) < 1e-4 for v in vectors)
    assert vectors[0] == pytest.approx(vectors[2], abs=1e-6)
    assert vectors[0] != pytest.approx(vectors[1], abs=1e-3)
    assert result.usage.prompt_tokens > 6
    floats = client.embeddings.create(
        model=MODEL, input="the fire is warm", encoding_format="float"
    )
    assert floats.data[0].embedding == pytest.approx(vectors[0], abs=1e-6)


def test_embeddings_match_llama_cpp_python(client, tiny_model_q8):
    text = "Hearth keeps models local"
    ours = client.embeddings.create(model=MODEL, input=text).data[0].embedding
    llm = llama_cpp.Llama(
        model_path=str(tiny_model_q8),
        embedding=True,
        n_ctx=512,
        pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
        flash_attn=True,  # as Hearth's context: "auto" resolves to on for this CPU
        verbose=False,
    )
    reference = llm.embed(text, normalize=True)
    assert ours == pytest.approx(reference, abs=1e-4)


def test_dimensions_shortens_and_renormalises(client):
    result = client.embeddings.create(model=MODEL, input="short", dimensions=64)
    vector = result.data[0].embedding
    assert len(vector) == 64
    assert abs(math.hypot(*vector) - 1.0) < 1e-4


def test_bad_embedding_inputs(serve_q8):
    url = f"{serve_q8.base_url}/v1/embeddings"
    tokens = httpx.post(url, json={"model": MODEL, "input": [[1, 2, 3]]})
    assert tokens.status_code == 400
    assert "check_embedding_ctx_length" in tokens.json()["error"]["message"]
    too_long = httpx.post(url, json={"model": MODEL, "input": "word " * 3000}, timeout=30)
    assert too_long.status_code == 400
    assert too_long.json()["error"]["code"] == "context_length_exceeded"


def test_ollama_embed(serve_q8, client):
    ours = ollama.Client(host=serve_q8.base_url).embed(model=MODEL, input=["a b", "c d"])
    assert len(ours.embeddings) == 2 and len(ours.embeddings[0]) == 256
    openai_vector = client.embeddings.create(model=MODEL, input="a b").data[0].embedding
    assert list(ours.embeddings[0]) == pytest.approx(openai_vector, abs=1e-6)
    legacy = httpx.post(
        f"{serve_q8.base_url}/api/embeddings", json={"model": MODEL, "prompt": "a b"}
    ).json()
    assert legacy["embedding"] == pytest.approx(openai_vector, abs=1e-6)


def test_unload_during_embeddings_is_an_error_not_a_crash(tiny_model_q8):
    """An explicit unload racing embedding requests: each request either finishes or
    gets a clear error; the freed model is never touched (that used to kill the worker)."""
    import asyncio
    import threading

    from hearth.core.errors import EngineFailedError, ModelNotLoadedError
    from hearth.core.model_info import LoadConfig
    from hearth.engine.engine import Engine

    for _ in range(3):
        engine = Engine()
        engine.load(LoadConfig(model_path=tiny_model_q8, n_ctx=256, n_parallel=1, n_threads=1))

        async def many(engine: Engine) -> list[object]:
            calls = [engine.embed(["some words to embed"] * 8) for _ in range(12)]
            return await asyncio.gather(*calls, return_exceptions=True)

        threading.Timer(0.01, engine.unload).start()
        results = asyncio.run(many(engine))
        errors = [r for r in results if isinstance(r, BaseException)]
        assert all(isinstance(e, EngineFailedError | ModelNotLoadedError) for e in errors), errors
        engine.unload()
