"""The prompt cache on a model with sliding-window layers (a tiny Gemma 3, window 64).

llama.cpp's sequence state holds only the last window of those layers, so a state
serves a prompt that extends all of it, and no shorter prefix: cut back further, the
layers would miss the positions before the cut, and the reply would change without a
word. Each reply here is compared with a cold prefill's.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine_runs import run
from hearth.core.generation import Finished, GenerationRequest
from hearth.core.model_info import LoadConfig
from hearth.core.prompt_cache import PromptCacheSettings
from hearth.core.sampling import SamplingParams
from hearth.engine.engine import Engine

PROMPT = (1, *(300 + (i * 7) % 200 for i in range(1100)))
FOLLOW_UP = (*PROMPT, 400, 401)
SYSTEM = PROMPT[:1000]
OTHER = (*SYSTEM, *(320 + i % 40 for i in range(200)))  # shares 1,000 of PROMPT's 1,101
GREEDY = SamplingParams(temperature=0.0, max_tokens=12)
# The last block boundary (256 tokens) at least 64 tokens before PROMPT's end, where its
# prefill pauses to save the state: what a branch near the end can restore.
CHECKPOINT = 1024


def config(model: Path) -> LoadConfig:
    return LoadConfig(model_path=model, n_ctx=2048, n_parallel=1, n_threads=2)


def settings(folder: Path) -> PromptCacheSettings:
    return PromptCacheSettings(folder=folder, min_tokens=512)


def ask(engine: Engine, tokens: tuple[int, ...]) -> tuple[str, Finished]:
    return asyncio.run(run(engine, GenerationRequest(prompt_tokens=tokens, params=GREEDY)))


def loaded_reply(engine: Engine, model: Path, tokens: tuple[int, ...]) -> tuple[str, int, int]:
    """Load, generate once, unload (which saves the slot): the text, cached tokens, and
    those from disk."""
    engine.load(config(model))
    try:
        text, finished = ask(engine, tokens)
    finally:
        engine.unload()
    assert finished.timings is not None
    return text, finished.usage.cached_tokens, finished.timings.cache_disk_tokens


def cold(model: Path, tokens: tuple[int, ...]) -> str:
    return loaded_reply(Engine(), model, tokens)[0]


def test_another_question_after_the_same_prompt_restores_the_checkpoint_and_replies_as_cold(
    tiny_gemma3: Path, tmp_path: Path
) -> None:
    """The prefill paused at CHECKPOINT and saved the state there: a prompt that leaves
    the first one after it (here, two tokens from its end) restores it."""
    engine = Engine(settings(tmp_path / "cache"))
    loaded_reply(engine, tiny_gemma3, FOLLOW_UP)
    other_question = (*PROMPT, 402, 403)
    text, n_cached, n_disk = loaded_reply(engine, tiny_gemma3, other_question)
    assert n_disk == n_cached == CHECKPOINT
    assert text == cold(tiny_gemma3, other_question)


def test_the_same_prompt_again_restores_its_end_and_replies_as_cold(
    tiny_gemma3: Path, tmp_path: Path
) -> None:
    """The state at the prompt's end (1,101 tokens) has a name of its own beside the
    checkpoint's (1,024), though both end in the same block: all but the last token,
    whose logits are needed, come back."""
    engine = Engine(settings(tmp_path / "cache"))
    first, _, _ = loaded_reply(engine, tiny_gemma3, PROMPT)
    text, _, n_disk = loaded_reply(engine, tiny_gemma3, PROMPT)
    assert n_disk == len(PROMPT) - 1
    assert text == first == cold(tiny_gemma3, PROMPT)


def test_a_state_saved_at_the_prompt_s_end_serves_a_prompt_that_extends_it(
    tiny_gemma3: Path, tmp_path: Path
) -> None:
    """A prompt 40 tokens past a block boundary: the checkpoint falls a block earlier,
    so the state at the prompt's end is saved too, and a follow-up extends all of it."""
    prompt = PROMPT[: 1024 + 40]
    engine = Engine(settings(tmp_path / "cache"))
    loaded_reply(engine, tiny_gemma3, prompt)
    follow_up = (*prompt, 400, 401)
    text, _, n_disk = loaded_reply(engine, tiny_gemma3, follow_up)
    assert n_disk >= len(prompt) > 1024  # the end's state (and the reply), not 768
    assert text == cold(tiny_gemma3, follow_up)


def test_a_prompt_sharing_less_than_the_saved_window_is_prefilled_not_restored(
    tiny_gemma3: Path, tmp_path: Path
) -> None:
    """The states saved for PROMPT hold their sliding layers' last 64 positions; OTHER
    leaves PROMPT at 1,000, before them, where those layers would have nothing to attend
    to."""
    engine = Engine(settings(tmp_path / "cache"))
    loaded_reply(engine, tiny_gemma3, PROMPT)
    text, n_cached, n_disk = loaded_reply(engine, tiny_gemma3, OTHER)
    assert n_disk == n_cached == 0
    assert text == cold(tiny_gemma3, OTHER)


def test_a_restored_slot_is_not_cut_back_past_its_window_for_the_next_request(
    tiny_gemma3: Path, tmp_path: Path
) -> None:
    """After a restore the slot's sliding layers start at the saved window; the next
    request shares a shorter prefix with it in memory, and must prefill, not reuse it."""
    engine = Engine(settings(tmp_path / "cache"))
    loaded_reply(engine, tiny_gemma3, PROMPT)
    engine.load(config(tiny_gemma3))
    try:
        _, restored = ask(engine, FOLLOW_UP)
        text, finished = ask(engine, OTHER)
    finally:
        engine.unload()
    assert restored.timings is not None and restored.timings.cache_disk_tokens > 0
    assert finished.usage.cached_tokens == 0
    assert text == cold(tiny_gemma3, OTHER)
