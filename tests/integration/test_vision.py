"""A vision model served: ``hearth serve --mmproj`` on the tiny llama and the synthetic
gemma3 projector made for it (tests/gguf_projector.py), driven by the official clients.

Every dialect carries its images to the projector: the prompt grows by the image's
embeddings, the picture decides the greedy reply, and a follow-up turn about the same
picture finds it in the slot's cache. The model's listing says it sees; a projector
for another model stops the server with a message that says so; a library model gets
the projector beside it by itself."""

from __future__ import annotations

import base64
import io
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import numpy as np
import ollama
import openai
import pytest
from PIL import Image

import gguf_projector
from hearth.library.library import Library
from server_process import ServeProcess, start_serve

N_IMAGE = gguf_projector.ProjectorSpec().n_image_tokens
ASK = "What is in this picture?"


def png_b64(seed: int) -> str:
    pixels = np.random.default_rng(seed).integers(0, 256, (48, 64, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def data_url(seed: int) -> str:
    return f"data:image/png;base64,{png_b64(seed)}"


@pytest.fixture(scope="module")
def server(
    tiny_model_f16: Path, tiny_projector: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServeProcess]:
    logs = tmp_path_factory.mktemp("vision-logs")
    served = start_serve(tiny_model_f16, logs, "--mmproj", str(tiny_projector), ctx=2048)
    yield served
    served.stop()


@pytest.fixture(scope="module")
def url(server: ServeProcess) -> str:
    return server.base_url


@pytest.fixture(scope="module")
def model(url: str) -> str:
    return str(httpx.get(f"{url}/v1/models").json()["data"][0]["id"])


@pytest.fixture(scope="module")
def oai(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)


def chat(
    client: openai.OpenAI, model: str, content: Any, *, history: list[Any] | None = None
) -> Any:
    return client.chat.completions.create(
        model=model,
        messages=[*(history or []), {"role": "user", "content": content}],
        max_tokens=8,
        temperature=0,
    )


def with_image(seed: int, text: str = ASK) -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": text},
        {"type": "image_url", "image_url": {"url": data_url(seed)}},
    ]


def test_the_listing_says_the_model_sees(url: str, model: str) -> None:
    listed = httpx.get(f"{url}/v1/models").json()["data"][0]
    assert listed["meta"]["vision"] is True
    assert "vision" in listed["meta"]["capabilities"]
    shown = ollama.Client(host=url).show(model)
    assert "vision" in (shown.capabilities or [])


def test_openai_chat_images_reach_the_model(oai: openai.OpenAI, model: str) -> None:
    text_only = chat(oai, model, ASK)
    seen = chat(oai, model, with_image(1))
    assert seen.usage is not None and text_only.usage is not None
    assert seen.usage.prompt_tokens >= text_only.usage.prompt_tokens + N_IMAGE
    timings = (seen.model_extra or {})["timings"]
    assert timings["image_tokens"] == N_IMAGE and timings["image_ms"] > 0


def test_the_picture_decides_the_greedy_reply(oai: openai.OpenAI, model: str) -> None:
    replies = [chat(oai, model, with_image(seed)).choices[0].message.content for seed in (1, 2, 1)]
    assert replies[0] != replies[1]
    assert replies[0] == replies[2]


def test_streamed_replies_see_the_image_too(oai: openai.OpenAI, model: str) -> None:
    whole = chat(oai, model, with_image(2)).choices[0].message.content
    stream = oai.chat.completions.create(
        model=model, messages=[{"role": "user", "content": with_image(2)}],  # type: ignore[misc, list-item]
        max_tokens=8, temperature=0, stream=True,
    )  # fmt: skip
    streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert streamed == whole


def test_a_follow_up_turn_reuses_the_image_from_the_cache(
    oai: openai.OpenAI, model: str, url: str
) -> None:
    system = {"role": "system", "content": "You describe pictures carefully. " * 12}
    question = with_image(5, "Describe this picture.")
    first = chat(oai, model, question, history=[system])
    reply = first.choices[0].message.content or ""
    history = [
        system, {"role": "user", "content": question}, {"role": "assistant", "content": reply}
    ]
    second = chat(oai, model, "And its colours?", history=history)
    assert first.usage is not None and second.usage is not None
    details = second.usage.prompt_tokens_details
    assert details is not None and details.cached_tokens is not None
    assert details.cached_tokens >= first.usage.prompt_tokens  # through the image
    assert (second.model_extra or {})["timings"]["image_tokens"] == 0  # not encoded again
    logged = httpx.get(f"{url}/hearth/v1/requests").json()["requests"]
    assert any(entry["image_tokens"] == N_IMAGE and entry["image_ms"] > 0 for entry in logged)


def test_responses_input_image_reaches_the_model(oai: openai.OpenAI, model: str) -> None:
    def ask(content: list[Any]) -> int:
        reply = oai.responses.create(
            model=model, input=[{"role": "user", "content": content}], max_output_tokens=4,
        )  # fmt: skip
        assert reply.usage is not None
        return reply.usage.input_tokens

    text = {"type": "input_text", "text": ASK}
    image = {"type": "input_image", "image_url": data_url(3), "detail": "auto"}
    assert ask([text, image]) >= ask([text]) + N_IMAGE


def test_anthropic_image_blocks_reach_the_model(url: str, model: str) -> None:
    client = anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0)
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": png_b64(4)}}  # fmt: skip
    text = {"type": "text", "text": ASK}
    plain = client.messages.create(model=model, max_tokens=4,
                                   messages=[{"role": "user", "content": [text]}])  # type: ignore[list-item]  # fmt: skip
    seen = client.messages.create(model=model, max_tokens=4,
                                  messages=[{"role": "user", "content": [image, text]}])  # type: ignore[list-item]  # fmt: skip
    assert prompt_of(seen) >= prompt_of(plain) + N_IMAGE
    counted = client.messages.count_tokens(
        model=model, messages=[{"role": "user", "content": [image, text]}]  # type: ignore[list-item]
    )
    assert counted.input_tokens == prompt_of(seen)  # the image's embeddings counted too


def prompt_of(message: anthropic.types.Message) -> int:
    """Anthropic's input_tokens leave out what was read from the cache."""
    return message.usage.input_tokens + (message.usage.cache_read_input_tokens or 0)


def test_ollama_images_reach_the_model_on_chat_and_generate(url: str, model: str) -> None:
    client = ollama.Client(host=url)
    options = {"num_predict": 4, "temperature": 0}
    plain = client.chat(model=model, messages=[{"role": "user", "content": ASK}], options=options)
    seen = client.chat(
        model=model, messages=[{"role": "user", "content": ASK, "images": [png_b64(6)]}],
        options=options,
    )  # fmt: skip
    assert (seen.prompt_eval_count or 0) >= (plain.prompt_eval_count or 0) + N_IMAGE
    plain_gen = client.generate(model=model, prompt=ASK, options=options)
    seen_gen = client.generate(model=model, prompt=ASK, images=[png_b64(6)], options=options)
    assert (seen_gen.prompt_eval_count or 0) >= (plain_gen.prompt_eval_count or 0) + N_IMAGE
    other = client.generate(model=model, prompt=ASK, images=[png_b64(7)], options=options)
    assert seen_gen.response != other.response


def test_a_bad_image_is_still_a_400_and_the_server_stays_up(oai: openai.OpenAI, model: str) -> None:
    cut = data_url(1)[:80]
    with pytest.raises(openai.BadRequestError, match="damaged or cut short"):
        chat(oai, model, [{"type": "image_url", "image_url": {"url": cut}}])
    assert chat(oai, model, "still there?").choices[0].message.content is not None


# --------------------------------------------------------------------------- loading


def _serve_exits(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hearth", "serve", "--port", "0", *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_projector_for_another_model_stops_serve_with_a_clear_message(
    tiny_model_f16: Path, tmp_path: Path
) -> None:
    other = gguf_projector.write_projector(
        tmp_path / "mmproj-other.gguf", gguf_projector.ProjectorSpec(text_n_embd=128)
    )
    done = _serve_exits("--model", str(tiny_model_f16), "--mmproj", str(other))
    assert done.returncode == 1
    assert "128-wide" in done.stderr and "belongs to another model" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_projector_file_is_refused_before_loading(tiny_model_f16: Path) -> None:
    done = _serve_exits("--model", str(tiny_model_f16), "--mmproj", "no-such-mmproj.gguf")
    assert done.returncode == 2
    assert "--mmproj no-such-mmproj.gguf: no such GGUF file" in done.stderr


VISION_ID = "tester/tiny-vision-GGUF/tiny-vision-F16"


@pytest.fixture
def vision_library(tiny_model_f16: Path, tiny_projector: Path) -> Path:
    """A vision model downloaded into the library as from a Hub repo: the model and
    its projector, named as unsloth's repos name it, side by side."""
    folder = Library().models_dir / "tester" / "tiny-vision-GGUF"
    folder.mkdir(parents=True)
    shutil.copy(tiny_model_f16, folder / "tiny-vision-F16.gguf")
    shutil.copy(tiny_projector, folder / "mmproj-F16.gguf")
    return folder


def test_a_library_model_loads_with_its_projector_just_in_time(
    vision_library: Path, tmp_path: Path
) -> None:
    server = start_serve(None, tmp_path, ctx=1024)
    try:
        url = server.base_url
        listed = httpx.get(f"{url}/v1/models").json()["data"]
        assert [m["id"] for m in listed] == [VISION_ID]  # the projector is no model
        assert listed[0]["meta"]["vision"] is True and listed[0]["meta"]["loaded"] is False
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        seen = chat(client, VISION_ID, with_image(1))
        assert (seen.model_extra or {})["timings"]["image_tokens"] == N_IMAGE
        assert "mmproj-F16.gguf" in server.log_text()
    finally:
        server.stop()


def test_serve_by_library_name_pairs_the_projector(vision_library: Path, tmp_path: Path) -> None:
    server = start_serve(Path(VISION_ID), tmp_path, ctx=1024)
    try:
        listed = httpx.get(f"{server.base_url}/v1/models").json()["data"][0]
        assert listed["meta"]["loaded"] and listed["meta"]["vision"] is True
    finally:
        server.stop()
