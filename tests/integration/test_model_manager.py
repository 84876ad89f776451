"""The model manager in process, on real llama.cpp: one lifecycle, whatever the races.

These drive :class:`ModelManager` and its engines directly (no HTTP), so a test can
count the engines' own threads: each loaded model has one scheduler and one relay thread,
and a leaked model shows up as one more of each.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import threading
from pathlib import Path

import pytest

import gguf_factory
from hearth.core.errors import HearthError, InvalidRequestError, ModelLoadError
from hearth.core.generation import ChatMessage
from hearth.core.model_info import LoadConfig, ModelInfo
from hearth.core.residency import PinnedModelsError, ResidencyLimits
from hearth.engine.engine import Engine
from hearth.library.library import Library
from hearth.server.catalog import LibraryCatalog
from hearth.server.model_manager import ModelManager
from hearth.server.model_state import LifecycleState


def _engine_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name in ("hearth-scheduler", "hearth-relay"))


def _config(path: Path) -> LoadConfig:
    return LoadConfig(model_path=path, n_ctx=256, n_parallel=2, n_threads=2)


class Engines:
    """Makes the manager's engines (one per loaded model) and frees them all at the end."""

    def __init__(self) -> None:
        self.made: list[Engine] = []

    def __call__(self) -> Engine:
        engine = Engine()
        self.made.append(engine)
        return engine

    def unload_all(self) -> None:
        for engine in self.made:
            engine.unload()


def _manager(engines: Engines, base: LoadConfig, **kwargs: object) -> ModelManager:
    return ModelManager(engines, catalog=LibraryCatalog(), base_config=base, **kwargs)  # type: ignore[arg-type]


def _loaded(manager: ModelManager) -> list[str]:
    return [r.info.id for r in manager.residents()]


def test_engine_refuses_a_second_load_while_one_runs(tiny_model_q8, tiny_model_q4km):
    """Two overlapping Engine.load calls used to leave a whole model behind."""
    engine = Engine()
    started = threading.Event()
    release = threading.Event()

    def slow_progress(_fraction: float) -> None:
        started.set()
        release.wait(30)

    first = threading.Thread(
        target=engine.load, args=(_config(tiny_model_q8),), kwargs={"on_progress": slow_progress}
    )
    first.start()
    try:
        assert started.wait(30)
        with pytest.raises(ModelLoadError, match="Another model is loading"):
            engine.load(_config(tiny_model_q4km))
    finally:
        release.set()
        first.join(30)
    try:
        assert engine.info is not None and engine.info.id == "hearth-tiny-Q8_0"
        assert _engine_threads() == 2
    finally:
        engine.unload()
    assert _engine_threads() == 0


def test_racing_switches_leave_one_model(tiny_model_q8, tiny_model_q4km):
    """Just-in-time requests racing the user's loads (Q8 and Q4 by turns, with replace),
    four rounds, with room for one model: each round ends with the user's model alone,
    a request never evicts it (it is refused, naming it), and no thread leaks."""
    library = Library()
    library.import_in_place(tiny_model_q8)
    library.import_in_place(tiny_model_q4km)
    engines = Engines()
    names = ("hearth-tiny-Q8_0", "hearth-tiny-Q4_K_M")

    async def scenario() -> None:
        manager = _manager(engines, _config(tiny_model_q8), limits=ResidencyLimits(1, 1 << 40))
        for round_ in range(4):
            user = names[round_ % 2]
            results = await asyncio.gather(
                manager.load(manager.config_for(user), replace=True),
                manager.resolve(names[1]),
                manager.resolve(names[0]),
                manager.resolve(names[1]),
                return_exceptions=True,
            )
            loaded, *served = results
            assert isinstance(loaded, ModelInfo) and loaded.id == user, loaded
            for result in served:
                if isinstance(result, PinnedModelsError):
                    assert result.pinned == (user,) and result.code == "models_pinned"
                else:
                    assert isinstance(result, ModelInfo), result
            assert _loaded(manager) == [user]
            assert [r.pinned for r in manager.residents()] == [True]
            assert _engine_threads() == 2
        await manager.unload()
        assert manager.state.state is LifecycleState.EMPTY
        await manager.close()

    try:
        asyncio.run(scenario())
    finally:
        engines.unload_all()
    assert _engine_threads() == 0


def test_failed_load_keeps_the_last_good_settings(tiny_model_q8, tiny_model_q4km):
    """A load with a bad cache type fails alone: the next switch and the next reload
    start from the last configuration that worked."""
    Library().import_in_place(tiny_model_q4km)
    engines = Engines()

    async def scenario() -> None:
        manager = _manager(engines, _config(tiny_model_q8), initial=True)
        assert manager.state.state is LifecycleState.LOADING  # before anything ran
        runner = asyncio.create_task(manager.run())
        info = await manager.resolve(None)
        assert info.id == "hearth-tiny-Q8_0"
        first_load = manager.state.load_id
        bad = dataclasses.replace(_config(tiny_model_q8), cache_type_k="q3")
        with pytest.raises(HearthError):
            await manager.load(bad)
        assert manager.state.state is LifecycleState.ERROR
        assert "q3" in (manager.state.error or "")
        switched = await manager.resolve("hearth-tiny-Q4_K_M")  # JIT after the failure
        assert switched.id == "hearth-tiny-Q4_K_M"
        assert manager.state.state is LifecycleState.READY
        assert manager.state.load_id == first_load + 1
        back = await manager.resolve("hearth-tiny-Q8_0")
        assert back.id == "hearth-tiny-Q8_0"
        runner.cancel()
        await manager.close()

    try:
        asyncio.run(scenario())
    finally:
        engines.unload_all()


def test_broken_template_fails_cleanly_and_the_next_model_loads(tiny_model_q8, tmp_path):
    """A template that doesn't compile is a clear error naming the model on each chat
    request (plain completions still work), and never leaves later requests waiting."""
    broken = gguf_factory.write_tiny_llama(
        tmp_path / "broken-template.gguf", chat_template="{% for x in %}"
    )
    library = Library()
    library.import_in_place(broken)
    library.import_in_place(tiny_model_q8)
    engines = Engines()

    async def scenario() -> None:
        manager = _manager(engines, _config(tiny_model_q8))
        loaded = await asyncio.wait_for(manager.use("broken-template"), 60)
        assert loaded.info.id == "broken-template"
        with pytest.raises(InvalidRequestError, match=r"broken-template.*does not compile"):
            loaded.engine.render_chat([ChatMessage(role="user", content="hi")])
        good = await asyncio.wait_for(manager.resolve("hearth-tiny-Q8_0"), 60)
        assert good.id == "hearth-tiny-Q8_0"
        assert manager.state.state is LifecycleState.READY
        assert _engine_threads() == 4  # both loaded, side by side
        await manager.close()

    try:
        asyncio.run(scenario())
    finally:
        engines.unload_all()


def test_a_failed_set_up_frees_the_model(tiny_model_q8, tmp_path):
    """A model that loads but can't be served (here: more slots than its batch holds)
    is closed at once, and the error names it."""
    engine = Engine()
    config = dataclasses.replace(_config(tiny_model_q8), n_parallel=8, n_batch=4, n_ubatch=4)
    with pytest.raises(HearthError):
        engine.load(config)
    assert engine.info is None
    assert _engine_threads() == 0


def test_waiters_share_a_failed_load(tiny_model_q8):
    """Requests queued behind a load that fails get its error; they don't each retry."""
    Library().import_in_place(tiny_model_q8)
    engines = Engines()
    failing = dataclasses.replace(_config(tiny_model_q8), cache_type_k="q3")

    async def scenario() -> int:
        manager = _manager(engines, failing)
        attempts = 0
        seen: list[LifecycleState] = []
        with manager.subscribe() as queue:
            results = await asyncio.gather(
                *(manager.resolve("hearth-tiny-Q8_0") for _ in range(4)), return_exceptions=True
            )
            while not queue.empty():
                seen.append(queue.get_nowait().state)
        attempts = sum(
            1
            for before, after in itertools.pairwise(seen)
            if after is LifecycleState.LOADING and before is not LifecycleState.LOADING
        )
        assert all(isinstance(r, HearthError) for r in results), results
        await manager.close()
        return attempts

    try:
        assert asyncio.run(scenario()) == 1
    finally:
        engines.unload_all()


def test_a_load_announced_during_an_unload_waits_for_it(tiny_model_q8):
    """A load announced while an unload runs is queued behind it, not refused: the
    state goes unloading -> loading -> ready, never "idle" between. A second announce of
    the same load joins it; cancelling one still queued settles as idle, nothing loaded."""
    Library().import_in_place(tiny_model_q8)
    engines = Engines()

    async def unload_then(manager: ModelManager, then: object) -> list[LifecycleState]:
        config = manager.config_for("hearth-tiny-Q8_0")
        seen: list[LifecycleState] = []
        with manager.subscribe() as queue:
            unloading = asyncio.create_task(manager.unload())
            while (await queue.get()).state is not LifecycleState.UNLOADING:
                pass
            assert manager.load_in_flight() is None  # an unload alone is no load
            manager.start_load(config)
            assert manager.load_in_flight() == config
            if then == "cancel":
                assert manager.cancel_load()
                assert manager.load_in_flight() is None
            await unloading
            while not (state := await queue.get()).settled:
                seen.append(state.state)
            seen.append(state.state)
        return seen

    async def scenario() -> None:
        manager = _manager(engines, _config(tiny_model_q8))
        await manager.resolve("hearth-tiny-Q8_0")
        seen = await unload_then(manager, "load")
        assert LifecycleState.EMPTY not in seen and seen[-1] is LifecycleState.READY
        assert _loaded(manager) == ["hearth-tiny-Q8_0"]
        cancelled = await unload_then(manager, "cancel")
        assert cancelled[-1] is LifecycleState.EMPTY and LifecycleState.READY not in cancelled
        assert _loaded(manager) == [] and manager.load_in_flight() is None
        await manager.close()

    try:
        asyncio.run(scenario())
    finally:
        engines.unload_all()
    assert _engine_threads() == 0


def test_a_user_s_load_that_pinned_models_keep_out_ends_in_its_error_state(
    tiny_model_q8, tiny_model_q4km
):
    """With room for one model, the user's Q8 loaded: the user's load of Q4 alongside is
    refused (awaited, or announced: its state says why), and Q8 stays."""
    Library().import_in_place(tiny_model_q4km)
    engines = Engines()

    async def scenario() -> None:
        manager = _manager(engines, _config(tiny_model_q8), limits=ResidencyLimits(1, 1 << 40))
        await manager.load(_config(tiny_model_q8))
        other = manager.config_for("hearth-tiny-Q4_K_M")
        with pytest.raises(PinnedModelsError):
            await manager.refuse_if_pinned(other)
        with pytest.raises(PinnedModelsError):
            await manager.load(other)
        with manager.subscribe() as states:
            manager.start_load(other)
            while (await states.get()).state is not LifecycleState.LOADING:
                pass  # the current state first: the awaited load's error
            while not (state := await states.get()).settled:
                pass
        assert state.state is LifecycleState.ERROR and state.model_id == "hearth-tiny-Q4_K_M"
        assert "beside 'hearth-tiny-Q8_0'" in (state.error or "")
        assert manager.load_in_flight() is None
        assert _loaded(manager) == ["hearth-tiny-Q8_0"]
        await manager.close()

    try:
        asyncio.run(scenario())
    finally:
        engines.unload_all()
