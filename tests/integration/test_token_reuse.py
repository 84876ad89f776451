"""A follow-up turn reuses its previous turn's token ids (engine/token_reuse.py), in-process
on real llama.cpp: only the new tokens are evaluated, and the reply is the one a fresh
engine gives for the same tokens.

A model's sampled ids are often not the tokenization of their own text. The scripted model
here answers " hello word!" as the pieces below, where the tokenizer would make "▁hello"
of the first three; so without reuse the follow-up's tokens differ from the cache from
the reply on, and its reply is evaluated again.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import gguf_factory
from engine_runs import run
from hearth.core.generation import ChatMessage, GenerationRequest
from hearth.core.model_info import LoadConfig
from hearth.core.sampling import SamplingParams
from hearth.engine.engine import Engine

REPLY = ("\u2581he", "l", "lo", "\u2581wo", "r", "d", "!")  # " hello word!", not canonical
TURN1 = (ChatMessage("system", "Answer briefly."), ChatMessage("user", "Say hello"))
NO_EOG = {gguf_factory.EOS_ID: -100.0, gguf_factory.IM_END_ID: -100.0}


@pytest.fixture(scope="module")
def scripted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("reuse")
    path: Path = gguf_factory.write_scripted_llama(folder / "scripted.gguf", REPLY,
                                                   context_length=2048)  # fmt: skip
    return path


def load(model: Path, n_parallel: int = 1) -> Engine:
    engine = Engine()
    engine.load(LoadConfig(model_path=model, n_ctx=1024, n_parallel=n_parallel, n_threads=2))
    return engine


def greedy(prompt: str = "", max_tokens: int = 16, **params: object) -> GenerationRequest:
    sampling = SamplingParams(temperature=0, max_tokens=max_tokens, **params)  # type: ignore[arg-type]
    return GenerationRequest(prompt=prompt, params=sampling)


def follow_up(engine: Engine, reply: str, tail: str = "And then?") -> tuple[str, str]:
    """The next turn's prompt, and the part of it after turn 1's prompt and reply."""
    first = engine.render_chat(TURN1)
    text = engine.render_chat([*TURN1, ChatMessage("assistant", reply), ChatMessage("user", tail)])
    assert text.startswith(first + reply)
    return text, text[len(first) + len(reply) :]


def test_follow_up_evaluates_only_its_new_tokens(scripted: Path) -> None:
    engine = load(scripted)
    try:
        reply, first = asyncio.run(run(engine, greedy(engine.render_chat(TURN1))))
        prompt, suffix = follow_up(engine, reply)
        _, second = asyncio.run(run(engine, greedy(prompt, max_tokens=4)))
        n_suffix = len(engine.tokenize_prompt(suffix, add_bos=False))
        n_plain = len(engine.tokenize_prompt(prompt))
    finally:
        engine.unload()
    assert reply == " hello word!" and first.usage.completion_tokens == len(REPLY)
    assert suffix.startswith(gguf_factory.IM_END)
    # Turn 1's prompt and all of its reply come from the cache; the rest is new.
    assert second.usage.cached_tokens == first.usage.prompt_tokens + len(REPLY)
    assert second.usage.prompt_tokens == first.usage.prompt_tokens + len(REPLY) + n_suffix
    assert n_plain < second.usage.prompt_tokens  # tokenized afresh, the reply is shorter


def test_reply_with_reused_tokens_equals_a_fresh_engine_on_those_tokens(
    tiny_model_q8: Path,
) -> None:
    """A random model pushed to a non-canonical reply ("l" eight times, which the
    tokenizer writes as four "ll"): the warm follow-up's reply and a fresh engine's for
    the same ids agree."""
    el = gguf_factory.VOCAB.tokens.index("l")
    engine = load(tiny_model_q8)
    try:
        first_prompt = engine.render_chat(TURN1)
        reply, first = asyncio.run(
            run(engine, greedy(first_prompt, max_tokens=8, logit_bias={**NO_EOG, el: 100.0}))
        )
        prompt, suffix = follow_up(engine, reply)
        warm_text, warm = asyncio.run(run(engine, greedy(prompt, logit_bias=NO_EOG)))
        ids = [
            *engine.tokenize_prompt(first_prompt),
            *[el] * 8,
            *engine.tokenize_prompt(suffix, add_bos=False),
        ]
        n_plain = len(engine.tokenize_prompt(prompt))
    finally:
        engine.unload()
    assert reply == "l" * 8
    assert n_plain == warm.usage.prompt_tokens - 4  # the reply's plain split is "ll" x 4
    assert warm.usage.prompt_tokens == len(ids)
    # All but the last reply token (sampled, never decoded: the turn hit max_tokens).
    assert warm.usage.cached_tokens == first.usage.prompt_tokens + 8 - 1
    fresh = load(tiny_model_q8)
    try:
        cold_text, cold = asyncio.run(
            run(fresh, GenerationRequest(prompt_tokens=tuple(ids), params=greedy(
                max_tokens=16, logit_bias=NO_EOG).params))
        )  # fmt: skip
    finally:
        fresh.unload()
    assert cold.usage.cached_tokens == 0
    assert warm_text == cold_text and len(warm_text) > 0


def test_canonical_reply_gives_the_plain_tokens_and_the_cold_reply(tiny_model_q8: Path) -> None:
    """Where the model's ids are the tokenizer's own split, reuse changes nothing but the
    work: the follow-up has exactly the tokens, and the reply, of a cold text prompt on a
    fresh engine (the rest after the reply is tokenized on its own: a SentencePiece space
    prefix there would show as an extra token)."""
    engine = load(tiny_model_q8)
    try:
        reply, first = asyncio.run(
            run(engine, greedy(engine.render_chat(TURN1), max_tokens=24, logit_bias=NO_EOG))
        )
        prompt, _ = follow_up(engine, reply)
        warm_text, warm = asyncio.run(run(engine, greedy(prompt, logit_bias=NO_EOG)))
    finally:
        engine.unload()
    fresh = load(tiny_model_q8)
    try:
        cold_text, cold = asyncio.run(run(fresh, greedy(prompt, logit_bias=NO_EOG)))
        n_plain = len(fresh.tokenize_prompt(prompt))
    finally:
        fresh.unload()
    assert warm.usage.cached_tokens == first.usage.prompt_tokens + 24 - 1
    assert warm.usage.prompt_tokens == cold.usage.prompt_tokens == n_plain
    assert cold.usage.cached_tokens == 0
    assert warm_text == cold_text


def test_no_reuse_where_the_rest_does_not_start_at_a_special_token(scripted: Path) -> None:
    """A client that sends the reply back edited ("hello word!!"): after the model's ids
    the text goes on with text, whose split on its own may differ from its split in
    place, so the prompt is tokenized whole."""
    engine = load(scripted)
    try:
        reply, _ = asyncio.run(run(engine, greedy(engine.render_chat(TURN1))))
        prompt, _ = follow_up(engine, reply + "!")
        _, second = asyncio.run(run(engine, greedy(prompt, max_tokens=4)))
        plain = engine.tokenize_prompt(prompt)
    finally:
        engine.unload()
    assert reply == " hello word!"
    assert second.usage.prompt_tokens == len(plain)  # the plain split: "▁hello" ...
