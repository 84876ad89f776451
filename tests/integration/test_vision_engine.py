"""Images through the batched scheduler, in-process: real llama.cpp and libmtmd, the tiny
llama and the synthetic gemma3 projector made for it (tests/gguf_projector.py).

The projector was first proven in a child process (tests/unit/engine/
test_projector_process.py), so an abort in libmtmd fails that test before it could
take this process down."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

import gguf_projector
from engine_runs import run
from hearth.core.errors import InvalidRequestError
from hearth.core.generation import Finished, TextDelta
from hearth.core.images import IMAGE_MARKER
from hearth.core.model_info import LoadConfig, SpecMode
from hearth.core.prompt_cache import PromptCacheSettings
from hearth.engine.engine import Engine
from hearth.engine.prompt_index import SUFFIX
from vision_runs import ASK, greedy, load_vision, picture

SPEC = gguf_projector.ProjectorSpec()


@pytest.fixture(scope="module")
def engine(tiny_model_f16: Path, tiny_projector: Path) -> Iterator[Engine]:
    loaded = load_vision(tiny_model_f16, tiny_projector)
    yield loaded
    loaded.unload()


def test_the_loaded_model_sees(engine: Engine) -> None:
    assert engine.info is not None and engine.info.vision


def test_image_tokens_reach_the_model(engine: Engine) -> None:
    _, text_only = asyncio.run(run(engine, greedy(ASK + "\nassistant:")))
    asking = greedy(ASK + IMAGE_MARKER + "\nassistant:", picture(1))
    _, with_image = asyncio.run(run(engine, asking))
    assert with_image.timings is not None and with_image.timings.image_tokens == SPEC.n_image_tokens
    assert with_image.timings.image_ms > 0
    assert with_image.usage.prompt_tokens >= text_only.usage.prompt_tokens + SPEC.n_image_tokens


def test_the_picture_decides_the_greedy_reply(engine: Engine) -> None:
    prompt = ASK + IMAGE_MARKER + "\nassistant:"
    replies = [asyncio.run(run(engine, greedy(prompt, picture(s))))[0] for s in (1, 2, 1)]
    assert replies[0] != replies[1]
    assert replies[0] == replies[2]


def test_image_requests_batched_together_reply_as_one_at_a_time(
    engine: Engine, tiny_model_f16: Path, tiny_projector: Path
) -> None:
    """Four requests with two images each, text between and after: their image steps
    take turns and their text prefills share decodes, and each greedy reply is what it
    is alone."""
    prompts = [
        (f"user: {i} first {IMAGE_MARKER} then {IMAGE_MARKER} compare\nassistant:",
         (picture(40 + i), picture(50 + i)))
        for i in range(4)
    ]  # fmt: skip
    alone = [asyncio.run(run(engine, greedy(p, *images)))[0] for p, images in prompts]

    async def together() -> list[tuple[str, Finished]]:
        return await asyncio.gather(*(run(fresh, greedy(p, *images)) for p, images in prompts))

    fresh = load_vision(tiny_model_f16, tiny_projector)  # nothing cached: every image is read
    try:
        batched = asyncio.run(together())
    finally:
        fresh.unload()
    assert [text for text, _ in batched] == alone
    assert all(f.timings and f.timings.image_tokens == 2 * SPEC.n_image_tokens for _, f in batched)
    assert len(set(alone)) > 1


def test_a_follow_up_about_the_same_picture_reuses_it_from_the_cache(engine: Engine) -> None:
    first_prompt = "user: look " + IMAGE_MARKER + " and tell me\nassistant:"
    reply, first = asyncio.run(run(engine, greedy(first_prompt, picture(7))))
    follow_up = first_prompt + reply + "\nuser: and the colours?\nassistant:"
    again = picture(7)  # the same picture, decoded anew as a new request's would be
    _, second = asyncio.run(run(engine, greedy(follow_up, again)))
    assert second.timings is not None
    assert second.usage.cached_tokens >= first.usage.prompt_tokens  # through the image
    assert second.timings.image_tokens == 0  # nothing encoded again
    other = greedy(first_prompt + reply + "\nuser: and this?\nassistant:", picture(8))
    _, third = asyncio.run(run(engine, other))  # another picture: no reuse through it
    assert third.timings is not None and third.timings.image_tokens == SPEC.n_image_tokens
    assert third.usage.cached_tokens < first.usage.prompt_tokens - SPEC.n_image_tokens


def test_text_streams_keep_decoding_while_images_are_read(engine: Engine) -> None:
    """Six pictures are encoded one after another beside the loop, and the running
    stream gets a token in every step: it is never held until the request with images
    is done (test_vision_encode_beside.py: none held during one long encode either)."""
    events: list[tuple[str, object]] = []

    async def both() -> None:
        text = await engine.start(greedy("Once upon a time", max_tokens=400))
        first = asyncio.Event()

        async def read_text() -> None:
            async for event in text:
                events.append(("text", event))
                first.set()

        reader = asyncio.create_task(read_text())
        await first.wait()
        images = [picture(20 + i) for i in range(6)]
        prompt = "user: " + " ".join(IMAGE_MARKER for _ in images) + "\nassistant:"
        events.append(("image-start", None))
        async for event in await engine.start(greedy(prompt, *images, max_tokens=1)):
            events.append(("image", event))
        text.cancel()
        await reader

    asyncio.run(both())
    start = events.index(("image-start", None))
    end = next(i for i, (who, e) in enumerate(events) if who == "image" and isinstance(e, Finished))
    during = [e for who, e in events[start:end] if who == "text" and isinstance(e, TextDelta)]
    assert len(during) >= 5  # a token at least for each image after the first
    finished = events[end][1]
    assert isinstance(finished, Finished) and finished.error is None
    assert finished.timings is not None and finished.timings.image_tokens == 6 * SPEC.n_image_tokens


def test_no_drafts_on_a_prompt_with_images(tiny_model_f16: Path, tiny_projector: Path) -> None:
    engine = load_vision(tiny_model_f16, tiny_projector, spec_mode=SpecMode.NGRAM)
    try:
        prompt = ASK + IMAGE_MARKER + " a a a a a a a a\nassistant:"
        _, finished = asyncio.run(run(engine, greedy(prompt, picture(3), max_tokens=24)))
        assert finished.error is None and finished.timings is not None
        assert finished.timings.draft_tokens == 0
        assert finished.usage.completion_tokens == 24
    finally:
        engine.unload()


def test_text_replies_are_the_same_with_the_projector_loaded(
    tiny_model_f16: Path, tiny_projector: Path
) -> None:
    replies = []
    for projector in (None, tiny_projector):
        engine = load_vision(tiny_model_f16, projector)
        try:
            replies.append(asyncio.run(run(engine, greedy("The river runs", max_tokens=16)))[0])
        finally:
            engine.unload()
    assert replies[0] == replies[1]


def test_an_image_bigger_than_the_batch_is_refused_before_it_runs(
    tiny_model_f16: Path, tiny_projector: Path
) -> None:
    engine = load_vision(tiny_model_f16, tiny_projector, n_batch=8, n_ubatch=8)  # gemma3: 9 in one
    try:
        with pytest.raises(InvalidRequestError, match="--ubatch"):
            asyncio.run(run(engine, greedy(ASK + IMAGE_MARKER, picture(1))))
        text, finished = asyncio.run(run(engine, greedy("still fine")))
        assert finished.error is None and text
    finally:
        engine.unload()


def test_images_for_a_model_without_a_projector_are_refused(tiny_model_f16: Path) -> None:
    engine = load_vision(tiny_model_f16, None)
    try:
        assert engine.info is not None and not engine.info.vision
        with pytest.raises(InvalidRequestError, match="reads text only"):
            asyncio.run(run(engine, greedy(ASK + IMAGE_MARKER, picture(1))))
    finally:
        engine.unload()


def test_the_prompt_cache_on_disk_skips_prompts_with_images(
    tiny_model_f16: Path, tiny_projector: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "prompt-cache"
    engine = Engine(PromptCacheSettings(folder=folder, min_tokens=16))
    engine.load(LoadConfig(model_path=tiny_model_f16, mmproj_path=tiny_projector, n_ctx=1024,
                           n_parallel=2, n_threads=2))  # fmt: skip
    try:
        with caplog.at_level(logging.INFO, logger="hearth.engine.prompt_cache"):
            words = "with many words before it, " * 60  # past the cache's 256-token blocks
            prompt = ASK + words + IMAGE_MARKER + "\nassistant:"
            _, finished = asyncio.run(run(engine, greedy(prompt, picture(4))))
            assert finished.error is None
    finally:
        engine.unload()  # saves every slot worth it
    assert "holds an image; not saved" in caplog.text
    assert not list(folder.rglob(f"*{SUFFIX}"))
