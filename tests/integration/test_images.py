"""Images sent to a model that can't see them (issue 23's first slice).

Before, OpenAI chat's ``image_url`` parts and Ollama's ``images`` were dropped without a
word: the reply came back 200 as if the model had seen the picture. Now every dialect
decodes the image, and a text-only model (or a remote engine, which Hearth doesn't pass
images to) refuses it with a 4xx in the dialect's own shape that says why and what to do.
A bad image is refused the same way, whatever the model, and the server stays up."""

from __future__ import annotations

import base64
import io

import anthropic
import httpx
import ollama
import openai
import pytest
from PIL import Image


def png_b64(color: tuple[int, int, int] = (200, 30, 30)) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), color).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


PNG = png_b64()
DATA_URL = f"data:image/png;base64,{PNG}"
REFUSAL = "reads text only"


@pytest.fixture(scope="module")
def url(serve_q8) -> str:
    return serve_q8.base_url


@pytest.fixture(scope="module")
def model(url: str) -> str:
    return str(httpx.get(f"{url}/v1/models").json()["data"][0]["id"])


def still_answers(url: str) -> None:
    reply = httpx.post(
        f"{url}/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2},
        timeout=60,
    )
    assert reply.status_code == 200, reply.text


def image_message(image_url: str = DATA_URL) -> list[dict[str, object]]:
    return [{"role": "user", "content": [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": image_url}},
    ]}]  # fmt: skip


@pytest.mark.parametrize("stream", [False, True])
def test_openai_chat_refuses_an_image_for_a_text_model(url: str, model: str, stream: bool):
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model=model, messages=image_message(), max_tokens=4, stream=stream  # type: ignore[arg-type]
        )
    error = caught.value.body
    assert isinstance(error, dict) and error["code"] == "images_not_supported", error
    assert REFUSAL in error["message"] and "projector" in error["message"]
    still_answers(url)


def test_openai_chat_refuses_remote_urls_and_other_parts(url: str, model: str):
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.BadRequestError, match="not fetched"):
        client.chat.completions.create(
            model=model, messages=image_message("https://example.invalid/cat.png"),  # type: ignore[arg-type]
            max_tokens=4,
        )
    audio = [{"role": "user", "content": [
        {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
    ]}]  # fmt: skip
    with pytest.raises(openai.BadRequestError, match="input_audio content is not supported"):
        client.chat.completions.create(model=model, messages=audio, max_tokens=4)  # type: ignore[arg-type]


def test_responses_refuses_an_input_image_for_a_text_model(url: str, model: str):
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.BadRequestError, match=REFUSAL):
        client.responses.create(
            model=model,
            input=[{"role": "user", "content": [
                {"type": "input_text", "text": "Describe it."},
                {"type": "input_image", "image_url": DATA_URL, "detail": "auto"},
            ]}],
            max_output_tokens=4,
        )
    with pytest.raises(openai.BadRequestError, match="damaged or cut short"):
        client.responses.create(
            model=model,
            input=[{"role": "user", "content": [
                {"type": "input_image", "image_url": DATA_URL[:60], "detail": "auto"},
            ]}],
            max_output_tokens=4,
        )


def test_anthropic_refuses_an_image_block_for_a_text_model(url: str, model: str):
    client = anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0)
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(
            model=model, max_tokens=4,
            messages=[{"role": "user", "content": [image, {"type": "text", "text": "What?"}]}],  # type: ignore[list-item]
        )  # fmt: skip
    body = caught.value.body
    assert isinstance(body, dict) and body["type"] == "error", body
    assert body["error"]["type"] == "invalid_request_error"
    assert REFUSAL in body["error"]["message"]
    with pytest.raises(anthropic.BadRequestError, match=REFUSAL):
        client.messages.count_tokens(
            model=model, messages=[{"role": "user", "content": [image]}]  # type: ignore[list-item]
        )
    by_url = {"type": "image", "source": {"type": "url", "url": "https://example.invalid/a.png"}}
    with pytest.raises(anthropic.BadRequestError, match="not fetched"):
        client.messages.create(
            model=model, max_tokens=4, messages=[{"role": "user", "content": [by_url]}]  # type: ignore[list-item]
        )
    still_answers(url)


def test_ollama_chat_and_generate_refuse_images_for_a_text_model(url: str, model: str):
    client = ollama.Client(host=url)
    with pytest.raises(ollama.ResponseError) as caught:
        client.chat(model=model, messages=[{"role": "user", "content": "What?", "images": [PNG]}])
    assert caught.value.status_code == 400 and REFUSAL in caught.value.error
    with pytest.raises(ollama.ResponseError) as caught:
        client.generate(model=model, prompt="What?", images=[PNG])
    assert caught.value.status_code == 400 and REFUSAL in caught.value.error
    with pytest.raises(ollama.ResponseError) as caught:
        client.generate(model=model, prompt="What?", images=[PNG], raw=True)
    assert caught.value.status_code == 400 and "templated prompt" in caught.value.error
    junk = base64.b64encode(b"not an image at all" * 8).decode()
    with pytest.raises(ollama.ResponseError) as caught:
        client.chat(model=model, messages=[{"role": "user", "content": "?", "images": [junk]}])
    assert caught.value.status_code == 400 and "not an image" in caught.value.error
    still_answers(url)


def test_a_remote_engine_is_not_sent_images_and_says_so(gateway, remote_model):
    client = openai.OpenAI(base_url=f"{gateway.base_url}/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.BadRequestError, match="remote engines"):
        client.chat.completions.create(
            model=f"oa/{remote_model}", messages=image_message(), max_tokens=4  # type: ignore[arg-type]
        )
