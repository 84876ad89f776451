"""The prompt cache on the real Gemma 3 270M, whose sliding-window layers see the last
512 positions: after a reload, a long document with another question restores the state
saved for the first question, and the greedy reply is the cold prefill's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine_runs import run
from hearth.core.generation import Finished, GenerationRequest
from hearth.core.model_info import LoadConfig
from hearth.core.prompt_cache import PromptCacheSettings
from hearth.core.sampling import SamplingParams
from hearth.engine.engine import Engine

pytestmark = pytest.mark.real_model

TOPICS = ("the harbour", "the mill", "the orchard", "the bell tower", "the ferry", "the school")
DOCUMENT = "".join(
    f"Entry {i}: in year {1800 + i} the town rebuilt {TOPICS[i % len(TOPICS)]}, "
    f"paid for by {3 + i % 7} families and finished after {2 + i % 5} seasons.\n"
    for i in range(60)
)  # about 1,900 tokens: well past the 512-position window
QUESTIONS = ("\nQuestion: what was rebuilt in 1805?\nAnswer:",
             "\nQuestion: how many families paid in 1812?\nAnswer:")  # fmt: skip
GREEDY = SamplingParams(temperature=0.0, max_tokens=8)


def answer(engine: Engine, config: LoadConfig, question: str) -> tuple[str, Finished]:
    engine.load(config)
    try:
        request = GenerationRequest(prompt=DOCUMENT + question, params=GREEDY)
        return asyncio.run(run(engine, request))
    finally:
        engine.unload()


def test_another_question_on_a_reloaded_gemma_3_restores_the_document_and_replies_as_cold(
    real_model: Path, tmp_path: Path
) -> None:
    config = LoadConfig(model_path=real_model, n_ctx=4096, n_parallel=1, n_threads=2)
    cached = Engine(PromptCacheSettings(folder=tmp_path / "cache", min_tokens=512))
    answer(cached, config, QUESTIONS[0])
    text, finished = answer(cached, config, QUESTIONS[1])
    assert finished.timings is not None
    n_prompt = finished.usage.prompt_tokens
    assert n_prompt - 320 < finished.timings.cache_disk_tokens < n_prompt  # the checkpoint
    cold, cold_finished = answer(Engine(), config, QUESTIONS[1])
    assert cold_finished.usage.cached_tokens == 0
    assert text == cold
