"""The engine on real llama.cpp over time: bounded state, vocabulary reads from other
threads while generating and across an unload, and the default context."""

from __future__ import annotations

import logging
import queue
import threading
from pathlib import Path

import pytest

import gguf_factory
from hearth.core.errors import EngineFailedError
from hearth.core.generation import Finished, FinishReason, GenerationEvent, TextDelta
from hearth.core.model_info import LoadConfig
from hearth.core.sampling import SamplingParams
from hearth.engine.model import LlamaModel
from hearth.engine.rate import DecodeRate
from hearth.engine.scheduler import Scheduler
from hearth.engine.slots import Job

NO_EOG = {gguf_factory.EOS_ID: -100.0, gguf_factory.IM_END_ID: -100.0}


def load(path: Path, **overrides: int) -> LlamaModel:
    config: dict[str, int] = {"n_ctx": 512, "n_parallel": 2, "n_threads": 2}
    config.update(overrides)
    return LlamaModel(LoadConfig(model_path=path, **config))  # type: ignore[arg-type]


class Collector:
    """A job's events, gathered on the relay thread; ``wait`` returns them all."""

    def __init__(self) -> None:
        self.events: queue.SimpleQueue[GenerationEvent] = queue.SimpleQueue()

    def job(self, model: LlamaModel, prompt: str, max_tokens: int) -> Job:
        tokens = model.tokenize(prompt, add_special=True, parse_special=True)
        params = SamplingParams(temperature=0, max_tokens=max_tokens, logit_bias=NO_EOG)
        return Job(tokens=tokens, params=params, sink=self.events.put)

    def wait(self) -> tuple[str, Finished]:
        text = []
        while True:
            event = self.events.get(timeout=120)
            if isinstance(event, TextDelta):
                text.append(event.text)
            elif isinstance(event, Finished):
                return "".join(text), event


def generate(scheduler: Scheduler, model: LlamaModel, prompts: list[str], n: int) -> list[str]:
    collectors = [Collector() for _ in prompts]
    for collector, prompt in zip(collectors, prompts, strict=True):
        scheduler.submit(collector.job(model, prompt, n))
    results = [c.wait() for c in collectors]
    assert all(f.reason is FinishReason.LENGTH for _, f in results), results
    assert all(f.usage.completion_tokens == n for _, f in results)
    return [text for text, _ in results]


def test_decode_rate_stays_bounded_without_status_calls(tiny_model_q8: Path) -> None:
    """Hundreds of decode steps and no status() call: the window keeps only its cap."""
    model = load(tiny_model_q8, n_parallel=1)
    rate = DecodeRate(window_s=3600.0, max_samples=64)
    scheduler = Scheduler(model, rate=rate)
    try:
        generate(scheduler, model, ["a long answer please"], 300)
        assert len(rate) == 64
        assert scheduler.status().decode_tokens_per_s > 0
    finally:
        scheduler.stop()
        model.close()


def test_completed_requests_are_capped(tiny_model_q8: Path) -> None:
    model = load(tiny_model_q8, n_parallel=2)
    scheduler = Scheduler(model)
    try:
        for round_ in range(110):
            generate(scheduler, model, [f"round {round_} a", f"round {round_} b"], 1)
        assert len(scheduler.completed(limit=10_000)) == 200
    finally:
        scheduler.stop()
        model.close()


def test_token_text_from_another_thread_while_generating(tiny_model_q8: Path) -> None:
    """The event loop reads pieces (/api/show, FIM texts) while the scheduler streams:
    neither may see the other's bytes."""
    model = load(tiny_model_q8)
    expected = [model.token_bytes(t, special=True) for t in range(model.n_vocab)]
    prompts = ["Fire is warm and", "Water runs down the"]
    scheduler = Scheduler(model)
    try:
        reference = generate(scheduler, model, prompts, 200)
        stop = threading.Event()
        mismatches: list[int] = []
        rounds = [0]

        def hammer() -> None:
            while not stop.is_set():
                for token in range(model.n_vocab):
                    raw = model.token_bytes(token, special=True)
                    text = model.token_text(token)
                    if raw != expected[token] or text != raw.decode("utf-8", "replace"):
                        mismatches.append(token)
                rounds[0] += 1

        threads = [threading.Thread(target=hammer) for _ in range(2)]
        for thread in threads:
            thread.start()
        try:
            during = generate(scheduler, model, prompts, 200)
        finally:
            stop.set()
            for thread in threads:
                thread.join(30)
    finally:
        scheduler.stop()
        model.close()
    assert rounds[0] > 0
    assert mismatches == []
    assert during == reference


def test_vocabulary_reads_racing_an_unload_fail_cleanly(tiny_model_q8: Path) -> None:
    """A read that starts after close() raises; one in flight finishes first."""
    model = load(tiny_model_q8)
    started = threading.Event()
    outcomes: list[str] = []

    def reader() -> None:
        try:
            while True:
                for token in range(model.n_vocab):
                    model.token_text(token)
                    model.tokenize("hello world", add_special=False, parse_special=False)
                    started.set()
        except EngineFailedError:
            outcomes.append("unloaded")

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    assert started.wait(30)
    model.close()
    for thread in threads:
        thread.join(30)
    assert outcomes == ["unloaded", "unloaded"]
    with pytest.raises(EngineFailedError):
        model.token_bytes(1)
    assert model.fim_tokens() is not None and model.bos == gguf_factory.BOS_ID  # no C call


@pytest.fixture(scope="module")
def trained_on_256(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("short-context") / "hearth-short-ctx-F16.gguf"
    return gguf_factory.write_tiny_llama(path, spec=gguf_factory.LlamaSpec(context_length=256))


def test_default_context_is_the_trained_one_when_smaller(
    trained_on_256: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="hearth.engine.model"):
        model = LlamaModel(LoadConfig(model_path=trained_on_256, n_parallel=2, n_threads=2))
    try:
        info = model.info("short")
        assert info.n_ctx_train == 256
        assert info.n_ctx_per_slot == 256 and info.n_slots == 2
    finally:
        model.close()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_explicit_context_past_the_trained_one_loads_with_a_warning(
    trained_on_256: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="hearth.engine.model"):
        model = LlamaModel(
            LoadConfig(model_path=trained_on_256, n_ctx=1024, n_parallel=2, n_threads=2)
        )
    try:
        assert model.info("short").n_ctx_per_slot == 1024
    finally:
        model.close()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("1024" in w and "trained on" in w and "256" in w for w in warnings), warnings
