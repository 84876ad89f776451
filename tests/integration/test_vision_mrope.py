"""M-RoPE vision (Qwen2-VL and its successors) through the batched scheduler, in-process:
real llama.cpp and libmtmd on the tiny Qwen2-VL pair and its Qwen2.5-VL variant
(tests/gguf_qwen2vl.py), and the tiny Qwen3-VL pairs (tests/gguf_qwen3vl.py: deepstack
embeddings three text widths wide, interleaved M-RoPE; a dense and an MoE decoder).

Such a model gives an image's embeddings a grid of positions and moves the text after
it on by the grid's longer side, fewer positions than embeddings. Each greedy reply
here is checked against what a reply should be: a fresh process evaluating the same
files with llama-cpp-python's own libmtmd helper (tests/mtmd_reference.py), a fresh
engine with nothing cached, or the same request alone. The projector was first proven
in a child (tests/unit/engine/test_projector_mrope_process.py)."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from pathlib import Path

import anthropic
import openai
import pytest

from child_runs import run_python
from engine_runs import run
from hearth.core.generation import Finished
from hearth.core.images import IMAGE_MARKER, ImageInput
from hearth.engine.engine import Engine
from server_process import start_serve
from vision_runs import ASK, NO_EOG, greedy, load_vision, noise_png, picture

REFERENCE = Path(__file__).parents[1] / "mtmd_reference.py"


def reference(
    pair: tuple[Path, Path], prompt: str, images: list[ImageInput], tmp: Path, max_tokens: int = 8
) -> dict[str, object]:
    """The greedy reply of a fresh process through mtmd_helper_eval_chunks."""
    described = []
    for i, image in enumerate(images):
        rgb = tmp / f"image{i}.rgb"
        rgb.write_bytes(image.rgb)
        described.append(
            {"rgb": str(rgb), "width": image.width, "height": image.height, "id": image.digest}
        )
    request = tmp / "request.json"
    request.write_text(json.dumps({
        "model": str(pair[0]), "projector": str(pair[1]), "prompt": prompt,
        "marker": IMAGE_MARKER, "images": described, "max_tokens": max_tokens,
        "banned": [int(t) for t in NO_EOG],
    }))  # fmt: skip
    result: dict[str, object] = run_python(REFERENCE, request).result
    return result


@pytest.fixture(
    scope="module", params=["tiny_qwen2vl", "tiny_qwen25vl", "tiny_qwen3vl", "tiny_qwen3vlmoe"]
)
def pair(request: pytest.FixtureRequest) -> tuple[Path, Path]:
    """Qwen2-VL's projector, then Qwen2.5-VL's (window attention in the encoder is
    libmtmd's; positions are placed the same way), then Qwen3-VL's pair, whose image
    embeddings carry deepstack slices the text model adds at its first layers, dense
    and mixture-of-experts."""
    files: tuple[Path, Path] = request.getfixturevalue(request.param)
    return files


@pytest.fixture(scope="module")
def engine(pair: tuple[Path, Path]) -> Iterator[Engine]:
    loaded = load_vision(*pair)
    yield loaded
    loaded.unload()


def test_the_m_rope_model_loads_and_sees(engine: Engine) -> None:
    assert engine.info is not None and engine.info.vision


def test_image_tokens_reach_the_model(engine: Engine) -> None:
    _, text_only = asyncio.run(run(engine, greedy(ASK + "\nassistant:")))
    asking = greedy(ASK + IMAGE_MARKER + "\nassistant:", picture(1))
    _, with_image = asyncio.run(run(engine, asking))
    # 80 x 120 pixels: a 3 x 4 grid of merged tokens (multiples of 28 pixels)
    assert with_image.timings is not None and with_image.timings.image_tokens == 12
    assert with_image.usage.prompt_tokens >= text_only.usage.prompt_tokens + 12


def test_the_picture_decides_the_greedy_reply(engine: Engine) -> None:
    prompt = ASK + IMAGE_MARKER + "\nassistant:"
    replies = [asyncio.run(run(engine, greedy(prompt, picture(s))))[0] for s in (1, 2, 1)]
    assert replies[0] != replies[1]
    assert replies[0] == replies[2]


def test_replies_equal_llama_cpp_pythons_own_mtmd_path(
    engine: Engine, pair: tuple[Path, Path], tmp_path: Path
) -> None:
    """Two images of different grids, text between and after: the engine's positions
    (each image from n_past on its grid, the text after it n_pos on) are libmtmd's."""
    prompt = f"user: first {IMAGE_MARKER} then {IMAGE_MARKER} compare them\nassistant:"
    images = [picture(3), picture(4, (112, 56))]
    reply, finished = asyncio.run(run(engine, greedy(prompt, *images, max_tokens=12)))
    expected = reference(pair, prompt, images, tmp_path, max_tokens=12)
    assert finished.usage.prompt_tokens == expected["n_tokens"]
    assert isinstance(expected["n_pos"], int) and expected["n_pos"] < finished.usage.prompt_tokens
    assert reply == expected["text"]


def test_a_follow_up_reuses_the_image_and_replies_as_a_fresh_engine(
    engine: Engine, pair: tuple[Path, Path], tmp_path: Path
) -> None:
    """The follow-up keeps the first turn's image in the slot's cache: its text goes on
    at the positions after the image, as a run with nothing cached would put it."""
    first_prompt = "user: look " + IMAGE_MARKER + " and tell me\nassistant:"
    reply, first = asyncio.run(run(engine, greedy(first_prompt, picture(7))))
    follow_up = first_prompt + reply + "\nuser: and the colours?\nassistant:"
    text, second = asyncio.run(run(engine, greedy(follow_up, picture(7))))
    assert second.timings is not None and second.timings.image_tokens == 0  # not read again
    assert second.usage.cached_tokens >= first.usage.prompt_tokens  # through the image
    assert text == reference(pair, follow_up, [picture(7)], tmp_path)["text"]


def test_image_requests_batched_together_reply_as_one_at_a_time(
    engine: Engine, pair: tuple[Path, Path]
) -> None:
    """Four requests with two images each share decodes; each slot keeps its own
    position shift, and each greedy reply is what it is alone."""
    prompts = [
        (f"user: {i} first {IMAGE_MARKER} then {IMAGE_MARKER} compare\nassistant:",
         (picture(40 + i), picture(50 + i, (56 + 28 * i, 112))))
        for i in range(4)
    ]  # fmt: skip
    alone = [asyncio.run(run(engine, greedy(p, *images)))[0] for p, images in prompts]

    async def together() -> list[tuple[str, Finished]]:
        return await asyncio.gather(*(run(fresh, greedy(p, *images)) for p, images in prompts))

    fresh = load_vision(*pair)  # nothing cached: every image is read
    try:
        batched = asyncio.run(together())
    finally:
        fresh.unload()
    assert [text for text, _ in batched] == alone
    assert len(set(alone)) > 1


def test_a_served_qwen3vl_sees_through_the_openai_and_anthropic_clients(
    tiny_qwen3vl: tuple[Path, Path], tmp_path: Path
) -> None:
    """``hearth serve --mmproj`` on the Qwen3-VL pair: each dialect's image reaches the
    deepstack model as its 12 grid tokens, and the picture decides the greedy reply."""
    model_path, projector = tiny_qwen3vl
    served = start_serve(model_path, tmp_path, "--mmproj", str(projector), ctx=2048)
    try:
        oai = openai.OpenAI(base_url=f"{served.base_url}/v1", api_key="unused", max_retries=0)
        model = oai.models.list().data[0].id

        def ask(seed: int | None) -> tuple[str, int]:
            content: list[dict[str, object]] = [{"type": "text", "text": "What is this?"}]
            if seed is not None:
                url = "data:image/png;base64," + base64.b64encode(noise_png(seed)).decode()
                content.append({"type": "image_url", "image_url": {"url": url}})
            done = oai.chat.completions.create(
                model=model, messages=[{"role": "user", "content": content}],  # type: ignore[misc, list-item]
                max_tokens=8, temperature=0, logit_bias={str(t): -100 for t in NO_EOG},
            )  # fmt: skip
            assert done.usage is not None
            timings = (done.model_extra or {})["timings"]
            assert timings["image_tokens"] == (0 if seed is None else 12)  # a 3 x 4 grid
            return done.choices[0].message.content or "", done.usage.prompt_tokens

        (_, text_only), (first, seen), (second, _), (again, _) = (
            ask(seed) for seed in (None, 1, 2, 1)
        )
        assert seen >= text_only + 12  # and libmtmd's vision_start/end around them
        assert first != second and first == again

        claude = anthropic.Anthropic(base_url=served.base_url, api_key="unused", max_retries=0)
        source = {"type": "base64", "media_type": "image/png",
                  "data": base64.b64encode(noise_png(1)).decode()}  # fmt: skip
        message = claude.messages.create(
            model=model, max_tokens=4,
            messages=[{"role": "user", "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "source": source},  # type: ignore[typeddict-item]
            ]}],
        )  # fmt: skip
        usage = message.usage  # input_tokens leave out what was read from the cache
        assert usage.input_tokens + (usage.cache_read_input_tokens or 0) >= text_only + 12
    finally:
        served.stop()
