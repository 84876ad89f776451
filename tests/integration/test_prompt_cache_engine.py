"""The prompt cache inside one process: a model unloaded and loaded again (a switch
back) finds its long prompt on disk, and the reply is the one a cold prefill gives."""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine_runs import run
from hearth.core.generation import GenerationRequest
from hearth.core.model_info import LoadConfig
from hearth.core.prompt_cache import PromptCacheSettings
from hearth.core.sampling import SamplingParams
from hearth.engine.engine import Engine

PROMPT = (1, *(300 + (i * 7) % 200 for i in range(1100)))
FOLLOW_UP = (*PROMPT, 400, 401)
GREEDY = SamplingParams(temperature=0.0, max_tokens=12)


def reply(engine: Engine, config: LoadConfig, tokens: tuple[int, ...]) -> tuple[str, int, int]:
    """Load, generate once, unload: the text, cached tokens, and those from disk."""
    engine.load(config)
    try:
        text, finished = asyncio.run(
            run(engine, GenerationRequest(prompt_tokens=tokens, params=GREEDY))
        )
    finally:
        engine.unload()
    assert finished.timings is not None
    return text, finished.usage.cached_tokens, finished.timings.cache_disk_tokens


def test_a_model_loaded_again_restores_its_prompt_and_replies_as_cold(
    tiny_model_f16: Path, tmp_path: Path
) -> None:
    config = LoadConfig(model_path=tiny_model_f16, n_ctx=2048, n_parallel=2, n_threads=2)
    cached = Engine(PromptCacheSettings(folder=tmp_path / "cache", min_tokens=512))
    assert reply(cached, config, PROMPT)[2] == 0
    text, n_cached, n_disk = reply(cached, config, FOLLOW_UP)
    assert n_disk == n_cached == len(PROMPT)  # all of the saved prompt, from disk
    cold, n_cold, _ = reply(Engine(), config, FOLLOW_UP)
    assert n_cold == 0
    assert text == cold


def test_other_kv_settings_do_not_restore_another_load_s_state(
    tiny_model_f16: Path, tmp_path: Path
) -> None:
    settings = PromptCacheSettings(folder=tmp_path / "cache", min_tokens=512)
    config = LoadConfig(model_path=tiny_model_f16, n_ctx=2048, n_parallel=1, n_threads=2)
    reply(Engine(settings), config, PROMPT)
    q8 = LoadConfig(model_path=tiny_model_f16, n_ctx=2048, n_parallel=1, n_threads=2,
                    cache_type_k="q8_0")  # fmt: skip
    assert reply(Engine(settings), q8, FOLLOW_UP)[2] == 0


def test_another_conversation_on_the_same_long_system_prompt_restores_the_shared_part(
    tiny_model_f16: Path, tmp_path: Path
) -> None:
    """Claude Code's shape: one long system prompt, a new first message each time. The
    state saved for the first conversation ends in a block that mixes in its message,
    yet the second finds it by the blocks they share."""
    config = LoadConfig(model_path=tiny_model_f16, n_ctx=2048, n_parallel=1, n_threads=2)
    system = PROMPT[:1000]
    first = (*system, *(270 + i % 50 for i in range(300)))
    second = (*system, *(320 + i % 40 for i in range(200)))
    settings = PromptCacheSettings(folder=tmp_path / "cache", min_tokens=512)
    reply(Engine(settings), config, first)
    text, n_cached, n_disk = reply(Engine(settings), config, second)
    assert n_disk == n_cached == len(system)  # the shared part, to the token
    cold, _, _ = reply(Engine(), config, second)
    assert text == cold
