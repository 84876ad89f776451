"""A saved state is read off the decode loop: a slow disk stalls only its own request.

The saved file is swapped for a named pipe of the same name: opening and reading it
blocks until the test writes, as a state of gigabytes on a slow disk would. Nothing is
timed: the other stream must run to its end while the read is still held up.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

from engine_runs import run
from hearth.core.generation import Finished, GenerationRequest
from hearth.core.model_info import LoadConfig
from hearth.core.prompt_cache import PromptCacheSettings
from hearth.core.sampling import SamplingParams
from hearth.engine.engine import Engine
from held_pipes import WAIT_S, open_other_end

PROMPT = (1, *(300 + (i * 7) % 200 for i in range(1100)))
FOLLOW_UP = (*PROMPT, 400, 401)
SHORT = (1, *range(300, 320))
GREEDY = SamplingParams(temperature=0.0, max_tokens=12)
OTHER = SamplingParams(temperature=0.0, max_tokens=24)


async def slow_read_and_a_stream(engine: Engine, pipe: Path) -> tuple[str, Finished, Finished]:
    slow = asyncio.create_task(
        run(engine, GenerationRequest(prompt_tokens=FOLLOW_UP, params=GREEDY))
    )
    writer = await asyncio.to_thread(open_other_end, pipe)
    try:
        other = run(engine, GenerationRequest(prompt_tokens=SHORT, params=OTHER))
        _, other_done = await asyncio.wait_for(other, WAIT_S)
        assert not slow.done()  # its read is still held up
    finally:
        os.close(writer)  # end of file: the pipe is no state, so a miss
    text, slow_done = await asyncio.wait_for(slow, WAIT_S * 5)
    return text, slow_done, other_done


def test_a_slow_read_of_a_saved_state_does_not_stall_other_streams(
    tiny_model_f16: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "cache"
    config = LoadConfig(model_path=tiny_model_f16, n_ctx=2048, n_parallel=2, n_threads=2)
    engine = Engine(PromptCacheSettings(folder=folder, min_tokens=512))
    engine.load(config)
    try:
        asyncio.run(run(engine, GenerationRequest(prompt_tokens=PROMPT, params=GREEDY)))
    finally:
        engine.unload()  # PROMPT's state is on disk now
    [saved] = folder.glob("*.kv")
    saved.unlink()
    os.mkfifo(saved)
    engine.load(config)
    try:
        text, slow, other = asyncio.run(slow_read_and_a_stream(engine, saved))
    finally:
        engine.unload()
        with contextlib.suppress(FileNotFoundError):
            saved.unlink()
    assert other.usage.completion_tokens == OTHER.max_tokens
    assert slow.timings is not None and slow.timings.cache_disk_tokens == 0
    cold = Engine()
    cold.load(config)
    try:
        cold_text, _ = asyncio.run(
            run(cold, GenerationRequest(prompt_tokens=FOLLOW_UP, params=GREEDY))
        )
    finally:
        cold.unload()
    assert text == cold_text
