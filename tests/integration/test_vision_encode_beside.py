"""The vision encoder runs on a thread of its own, beside the decode loop (issue 23):
text streams keep their pace while a picture is encoded, and a request that ends while
its picture is being encoded loses nothing for the next one.

The projector here has some depth (1,024 patches through 6 blocks), so that one encode
costs the time of many of the tiny model's decode steps on any machine: the old loop,
which encoded on the decoding thread, gave a stream at most the 2-3 tokens of the image
request's own text steps meanwhile."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import gguf_projector
from engine_runs import run
from hearth.core.generation import Finished, FinishReason, TextDelta
from hearth.core.images import IMAGE_MARKER
from hearth.engine.engine import Engine
from vision_runs import ASK, greedy, load_vision, picture

DEEP = gguf_projector.ProjectorSpec(
    n_embd=384, n_ff=1536, n_layer=6, n_head=6, image_size=448, patch_size=14, scale_factor=4
)
PROMPT = ASK + IMAGE_MARKER + "\nassistant:"


@pytest.fixture(scope="module")
def engine(tiny_model_f16: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    folder = tmp_path_factory.mktemp("deep-projector")
    projector = gguf_projector.write_projector(folder / "mmproj-deep-F16.gguf", DEEP)
    loaded = load_vision(tiny_model_f16, projector, n_ctx=16384)  # room for a long stream
    yield loaded
    loaded.unload()


def encoding() -> bool:
    return any(t.name.startswith("hearth-image-encoder") for t in threading.enumerate())


def test_a_text_stream_keeps_decoding_while_a_picture_is_encoded(engine: Engine) -> None:
    during: list[TextDelta] = []
    finished: list[Finished] = []
    text_ended_first: list[bool] = []

    async def both() -> None:
        text = await engine.start(greedy("Once upon a time", max_tokens=16000))
        streaming = asyncio.Event()
        image_running = False

        async def read_text() -> None:
            async for event in text:
                streaming.set()
                if image_running and isinstance(event, TextDelta):
                    during.append(event)
                if image_running and isinstance(event, Finished):
                    text_ended_first.append(True)

        reader = asyncio.create_task(read_text())
        await streaming.wait()
        image_running = True
        async for event in await engine.start(greedy(PROMPT, picture(7), max_tokens=1)):
            if isinstance(event, Finished):
                finished.append(event)
        image_running = False
        text.cancel()
        await reader

    asyncio.run(both())
    assert finished and finished[0].error is None
    assert not text_ended_first  # the stream ran the whole time
    timings = finished[0].timings
    assert timings is not None and timings.image_tokens == DEEP.n_image_tokens
    # here: 787 tokens during a 549 ms encode; 4 during 289 ms when it held the loop
    assert len(during) >= 20, f"{len(during)} text tokens during a {timings.image_ms:.0f} ms encode"


def test_a_request_cancelled_during_its_encode_leaves_the_next_one_whole(engine: Engine) -> None:
    reference, _ = asyncio.run(run(engine, greedy(PROMPT, picture(11), max_tokens=6)))

    async def cancel_then_ask() -> tuple[Finished, str, Finished]:
        cancelled = await engine.start(greedy(PROMPT, picture(12), max_tokens=6))
        cancelled.cancel()  # at once: its picture is being encoded, or about to be
        ended = [e async for e in cancelled if isinstance(e, Finished)]
        text, after = await run(engine, greedy(PROMPT, picture(11), max_tokens=6))
        return ended[0], text, after

    ended, again, after = asyncio.run(cancel_then_ask())
    assert ended.reason is FinishReason.CANCELLED
    assert after.error is None and again == reference
    _, text_only = asyncio.run(run(engine, greedy("Once upon a time", max_tokens=4)))
    assert text_only.error is None and text_only.usage.completion_tokens == 4


def test_no_encoder_thread_outlives_its_picture(engine: Engine) -> None:
    """A kept encoder thread would keep an OpenMP team of its own alive, and with more
    such threads than cores libgomp makes every team's barriers sleep, the decode
    loop's too (4 streams: 118 tok/s before a first picture, 95 after it)."""
    _, finished = asyncio.run(run(engine, greedy(PROMPT, picture(13), max_tokens=2)))
    assert finished.error is None and finished.timings is not None
    assert finished.timings.image_tokens == DEEP.n_image_tokens
    encoders = [t for t in threading.enumerate() if t.name.startswith("hearth-image-encoder")]
    for thread in encoders:  # each ends as soon as it has handed its result over
        thread.join(timeout=30)
        assert not thread.is_alive(), f"{thread.name} outlived its picture"


def test_an_unload_during_an_encode_ends_the_request_and_frees_cleanly(
    tiny_model_f16: Path, tmp_path: Path
) -> None:
    """The unload waits for the encode in flight before the projector is freed (its
    thread reads the projector and the prompt's chunks), and the request ends with an
    error that says why, never as a finished answer."""
    projector = gguf_projector.write_projector(tmp_path / "mmproj-deep-F16.gguf", DEEP)
    engine = load_vision(tiny_model_f16, projector)

    async def ask_then_unload() -> Finished:
        stream = await engine.start(greedy(PROMPT, picture(14), max_tokens=4))
        deadline = time.monotonic() + 30
        while not encoding():  # the encode takes many milliseconds even on a fast CPU
            assert time.monotonic() < deadline, "the picture was never encoded"
            await asyncio.sleep(0.001)
        # while its picture is being encoded, as the server unloads a model
        await asyncio.to_thread(engine.unload, "The model was unloaded.")
        async for event in stream:
            if isinstance(event, Finished):
                return event
        raise AssertionError("no Finished event")

    ended = asyncio.run(ask_then_unload())
    assert ended.reason is FinishReason.ERROR and ended.error == "The model was unloaded."
    again = load_vision(tiny_model_f16, projector)
    try:
        _, finished = asyncio.run(run(again, greedy(PROMPT, picture(14), max_tokens=2)))
        assert finished.error is None and finished.timings is not None
        assert finished.timings.image_tokens == DEEP.n_image_tokens
    finally:
        again.unload()
