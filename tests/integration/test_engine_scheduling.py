"""The scheduler on real llama.cpp, in-process: batching, queueing, cancel, prefix cache."""

from __future__ import annotations

import asyncio
from pathlib import Path

import llama_cpp
import pytest

from engine_runs import run
from hearth.core.errors import QueueFullError
from hearth.core.generation import Finished, FinishReason, GenerationRequest, TextDelta
from hearth.core.model_info import LoadConfig
from hearth.core.sampling import SamplingParams
from hearth.engine.engine import Engine

NO_EOG = {2: -100.0, 260: -100.0}
PROMPTS = ["Fire is warm and", "Water runs down the", "Stone is heavy so", "Wind blows over"]


def load(model: Path, **overrides: int) -> Engine:
    engine = Engine()
    config = dict(n_ctx=512, n_parallel=4, max_queue=2, n_threads=2)
    config.update(overrides)
    engine.load(LoadConfig(model_path=model, **config))
    return engine


def greedy(prompt: str, max_tokens: int = 24) -> GenerationRequest:
    return GenerationRequest(
        prompt=prompt,
        params=SamplingParams(temperature=0, max_tokens=max_tokens, logit_bias=NO_EOG),
    )


@pytest.mark.usefixtures("cpu_backend_only")
def test_concurrent_greedy_equals_one_at_a_time(tiny_model_q8):
    sequential = []
    for prompt in PROMPTS:  # a cold engine per prompt: nothing cached, nothing shared
        engine = load(tiny_model_q8)
        try:
            sequential.append(asyncio.run(run(engine, greedy(prompt)))[0])
        finally:
            engine.unload()
    engine = load(tiny_model_q8)
    try:

        async def together():
            return await asyncio.gather(*(run(engine, greedy(p)) for p in PROMPTS))

        concurrent = [text for text, _ in asyncio.run(together())]
    finally:
        engine.unload()
    assert concurrent == sequential
    assert len(set(sequential)) == 4


def test_fifth_request_waits_then_runs_when_one_is_cancelled(tiny_model_q8):
    engine = load(tiny_model_q8, n_ctx=4096)  # long enough to still run after the checks

    async def scenario():
        long_request = greedy("busy", max_tokens=4000)
        streams = [await engine.start(long_request) for _ in range(4)]
        iterators = [aiter(s) for s in streams]
        for it in iterators:  # all four are decoding
            assert isinstance(await anext(it), TextDelta)
        fifth = await engine.start(greedy("the fifth", max_tokens=8))
        status = engine.status()  # start() has queued it; no slot can take it yet
        assert status is not None and status.queue_depth == 1
        assert all(slot.busy for slot in status.slots)
        streams[0].cancel()
        text, finished = "", None
        async for event in fifth:
            if isinstance(event, TextDelta):
                text += event.text
            else:
                finished = event
        for stream in streams[1:]:
            stream.cancel()
        drained = [e async for e in iterators[0] if isinstance(e, Finished)]
        return text, finished, drained

    try:
        text, finished, drained = asyncio.run(scenario())
    finally:
        engine.unload()
    assert finished is not None and finished.reason is FinishReason.LENGTH
    assert finished.usage.completion_tokens == 8
    assert text
    assert drained and drained[0].reason is FinishReason.CANCELLED


def test_queue_full_is_refused(tiny_model_q8):
    engine = load(tiny_model_q8, n_parallel=1, max_queue=1)

    async def scenario():
        running = await engine.start(greedy("one", max_tokens=300))
        await anext(aiter(running))
        queued = await engine.start(greedy("two"))
        with pytest.raises(QueueFullError):
            await engine.start(greedy("three"))
        running.cancel()
        queued.cancel()

    try:
        asyncio.run(scenario())
    finally:
        engine.unload()


def test_follow_up_turn_uses_cache_and_matches_cold_run(tiny_model_q8):
    first_turn = "<|im_start|>user\nTell me about fire.<|im_end|>\n<|im_start|>assistant\n"
    engine = load(tiny_model_q8)
    try:
        reply, first = asyncio.run(run(engine, greedy(first_turn)))
        follow_up = first_turn + reply + "<|im_end|>\n<|im_start|>user\nMore.<|im_end|>\n"
        warm_text, warm = asyncio.run(run(engine, greedy(follow_up)))
    finally:
        engine.unload()
    cold_engine = load(tiny_model_q8)
    try:
        cold_text, cold = asyncio.run(run(cold_engine, greedy(follow_up)))
    finally:
        cold_engine.unload()
    assert first.usage.cached_tokens == 0
    assert warm.usage.cached_tokens >= first.usage.prompt_tokens
    assert cold.usage.cached_tokens == 0
    assert warm_text == cold_text


def test_load_knobs_and_backend_report(tiny_model_q8):
    from hearth.core.model_info import FlashAttention, SplitMode

    engine = Engine()
    info = engine.load(
        LoadConfig(
            model_path=tiny_model_q8,
            n_ctx=256,
            n_parallel=2,
            kv_unified=True,
            split_mode=SplitMode.NONE,
            main_gpu=0,
            tensor_split=(1.0,),
            flash_attention=FlashAttention.OFF,
            cache_type_k="q8_0",
            n_batch=64,
            n_ubatch=32,
            n_threads=1,
            use_mmap=False,
        )
    )
    try:
        # All layers were asked for (-1): they are offloaded where this llama.cpp build
        # can offload and sees a GPU, none otherwise (CPU builds, GPU-less machines).
        gpus = [d for d in info.devices if d.kind in ("gpu", "igpu")]
        can_offload = bool(llama_cpp.llama_supports_gpu_offload()) and bool(gpus)
        assert info.n_layer == 2 and info.gpu_layers == (2 if can_offload else 0)
        cpus = [d for d in info.devices if d.kind == "cpu"]
        assert cpus and cpus[0].memory_total > 0
        assert info.n_slots == 2 and info.quantization == "Q8_0"
        _, finished = asyncio.run(run(engine, greedy("knobs", max_tokens=70)))
        assert finished.usage.completion_tokens == 70  # more than n_batch/n_ubatch of work
    finally:
        engine.unload()


def test_unknown_cache_type_is_a_clear_error(tiny_model_q8):
    from hearth.core.errors import HearthError

    with pytest.raises(HearthError, match=r"(?i)unknown KV.cache type"):
        Engine().load(LoadConfig(model_path=tiny_model_q8, n_ctx=256, cache_type_k="q3"))


def test_cached_prefix_is_copied_next_to_busy_slots_and_matches_cold_run(tiny_model_q8):
    """Three conversations fill slots 0-2, a long stream holds slot 3; the first
    conversation's follow-up lands in slot 2 (adjacent) by copying slot 0's KV there,
    after slot 2's own conversation moved to slot 1 (least recently used)."""
    turns = [
        f"<|im_start|>user\nConversation {name}: {'tell me a long story please ' * 4}"
        "<|im_end|>\n<|im_start|>assistant\n"
        for name in ("alpha", "beta", "gamma")
    ]
    follow_up = turns[0] + "Once upon a time.<|im_end|>\n<|im_start|>user\nGo on.<|im_end|>\n"
    engine = load(tiny_model_q8, n_ctx=1024)

    async def scenario():
        for turn in turns:
            await run(engine, greedy(turn, max_tokens=4))
        assert [s.cached_tokens > 64 for s in engine.status().slots] == [True] * 3 + [False]
        holder = await engine.start(greedy("hold slot three", max_tokens=900))
        await anext(aiter(holder))
        busy = [s.seq_id for s in engine.status().slots if s.busy]
        warm = await run(engine, greedy(follow_up))
        gamma_again = await run(engine, greedy(turns[2] + "More", max_tokens=4))
        holder.cancel()
        return busy, warm, gamma_again

    try:
        busy, (warm_text, warm), (_, gamma_again) = asyncio.run(scenario())
    finally:
        engine.unload()
    cold_engine = load(tiny_model_q8, n_ctx=1024)
    try:
        cold_text, cold = asyncio.run(run(cold_engine, greedy(follow_up)))
    finally:
        cold_engine.unload()
    assert busy == [3]
    assert warm.usage.cached_tokens > 64  # alpha's prompt, copied from slot 0
    assert cold.usage.cached_tokens == 0
    assert warm_text == cold_text
    assert gamma_again.usage.cached_tokens > 64  # gamma's cache survived in slot 1
