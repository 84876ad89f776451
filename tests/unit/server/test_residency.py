"""Which idle models make room for one more: least recently used first, only those loaded
just in time (never the user's pinned ones, never a busy one); the refusal when pinned
models keep it out, and the bounded wait for busy ones."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from hearth.core.errors import ModelsBusyError
from hearth.core.model_info import LoadConfig, ModelInfo
from hearth.core.residency import PinnedModelsError, ResidencyLimits
from hearth.engine.engine import Engine
from hearth.server.idle_unload import IdleClock
from hearth.server.load_queue import LoadQueue
from hearth.server.model_loader import ModelLoader
from hearth.server.model_memory import estimate_load_bytes
from hearth.server.residency import Residency, Resident

GIB = 1 << 30


def _resident(name: str, *, gib: float = 1.0, pinned: bool = False) -> Resident:
    info = ModelInfo(
        id=name, path=Path(f"/m/{name}.gguf"), architecture="llama", n_params=1, size_bytes=1,
        quantization="Q8_0", n_ctx_train=512, n_ctx_per_slot=512, n_slots=1, n_vocab=10,
        chat_template=None, has_fim=False, created=0,
    )  # fmt: skip
    return Resident(Engine(), LoadConfig(info.path), info, pinned, IdleClock(None),
                    estimate_bytes=int(gib * GIB))  # fmt: skip


def _residency(*residents: Resident, max_models: int = 3, budget_gib: float = 100) -> Residency:
    residency = Residency(ResidencyLimits(max_models, int(budget_gib * GIB)))
    for resident in residents:  # used in this order: the first is the least recent
        resident.clock.touch()
        time.sleep(0.001)
        residency.add(resident)
    return residency


def test_it_fits_as_is_or_the_least_recently_used_idle_model_goes() -> None:
    a, b = _resident("a"), _resident("b")
    assert _residency(a, b).victims(GIB) == []
    assert _residency(a, b, max_models=2).victims(GIB) == [a]
    b.clock.touch()
    a.clock.touch()  # now b is the least recent
    assert _residency(b, a, max_models=2).victims(GIB) == [b]


def test_the_budget_counts_memory_and_evicts_as_many_as_needed() -> None:
    a, b, c = _resident("a", gib=2), _resident("b", gib=2), _resident("c", gib=2)
    residency = _residency(a, b, c, max_models=9, budget_gib=7)
    assert residency.used_bytes == 6 * GIB
    assert residency.victims(1 * GIB) == []
    assert residency.victims(3 * GIB) == [a]
    assert residency.victims(5 * GIB) == [a, b]
    assert residency.victims(50 * GIB) == [a, b, c]  # alone, it may try (llama.cpp decides)


def test_a_pinned_model_is_never_evicted_only_just_in_time_ones_are() -> None:
    pinned, jit = _resident("pinned", pinned=True), _resident("jit")  # pinned: the LRU
    residency = _residency(pinned, jit, max_models=2)
    assert residency.victims(GIB) == [jit]
    assert residency.held_by_pinned(GIB) == []
    alone = _residency(pinned, max_models=1)
    assert alone.victims(GIB) is None  # the user's model stays
    assert alone.held_by_pinned(GIB) == [pinned]  # refused at once: no wait helps


def test_pinned_models_count_against_the_budget_and_refuse_what_they_keep_out() -> None:
    pinned, jit = _resident("pinned", gib=2, pinned=True), _resident("jit", gib=2)
    residency = _residency(pinned, jit, max_models=9, budget_gib=5)
    assert residency.victims(3 * GIB) == [jit]
    assert residency.victims(4 * GIB) is None  # evicting jit frees 2 of the 4 needed
    assert residency.held_by_pinned(4 * GIB) == [pinned]
    assert residency.held_by_pinned(2 * GIB, keep=pinned) == []  # its own reload


@pytest.mark.parametrize("max_models", [1, 2], ids=["count", "memory"])
def test_the_refusal_names_the_pinned_models_why_and_the_way_out(
    tiny_model_f16: Path, max_models: int
) -> None:
    config = LoadConfig(tiny_model_f16)
    need = estimate_load_bytes(config)
    pinned = _resident("mine", gib=need / GIB, pinned=True)
    residency = _residency(pinned, max_models=max_models, budget_gib=1.5 * need / GIB)
    loader = ModelLoader(Engine, residency, ttl_s=None, jit_ttl_s=None)
    with pytest.raises(PinnedModelsError) as refused:
        asyncio.run(loader.refuse_if_pinned(config))
    message = refused.value.message
    assert refused.value.pinned == ("mine",) and refused.value.code == "models_pinned"
    assert f"'{tiny_model_f16.stem}' can't be loaded beside 'mine'" in message
    why = "--max-models allows 1" if max_models == 1 else "the memory budget"
    assert why in message
    assert '/hearth/v1/unload {"model": "mine"}' in message and "replace" in message
    assert len(residency) == 1  # nothing changed


def test_a_busy_just_in_time_model_is_waited_for_even_beside_a_pinned_one() -> None:
    pinned, jit = _resident("pinned", pinned=True), _resident("jit")
    residency = _residency(pinned, jit, max_models=2)
    with jit.clock.in_use():
        assert residency.victims(GIB) is None
        assert residency.held_by_pinned(GIB) == []  # once jit is idle, it goes
        assert residency.blockers() == [jit]


def test_a_busy_model_is_never_chosen() -> None:
    a, b = _resident("a"), _resident("b")
    residency = _residency(a, b, max_models=2)
    with a.clock.in_use():
        assert residency.victims(GIB) == [b]
        with b.clock.in_use():
            assert residency.victims(GIB) is None  # wait for one of them
            assert [r.info.id for r in residency.blockers()] == ["a", "b"]
    assert residency.victims(GIB) is not None


def test_find_by_any_name_and_the_most_recent_without_one() -> None:
    a, b = _resident("a"), _resident("b")
    residency = _residency(a, b)
    assert residency.find("a:latest") is a and residency.find("/m/b.gguf") is b
    assert residency.find(None) is b and residency.find("c") is None


def test_the_wait_is_bounded_in_time_and_in_count() -> None:
    async def scenario() -> tuple[float, ModelsBusyError, ModelsBusyError, str]:
        queue = LoadQueue(max_waiting=1, timeout_s=0.3)

        async def blocked() -> str | None:
            return None

        started = time.monotonic()
        first = asyncio.create_task(queue.run(blocked, model_id="m", blocked_by=lambda: ["b"]))
        await asyncio.sleep(0)
        assert queue.waiting == 1
        with pytest.raises(ModelsBusyError) as full:  # one already waits: refused at once
            await queue.run(blocked, model_id="m2", blocked_by=lambda: ["b"])
        with pytest.raises(ModelsBusyError) as late:
            await first
        elapsed = time.monotonic() - started
        freed = [None, "loaded"]

        async def frees_up() -> str | None:
            return freed.pop(0)

        result = await queue.run(frees_up, model_id="m", blocked_by=lambda: ["b"])
        return elapsed, full.value, late.value, result

    elapsed, full, late, result = asyncio.run(scenario())
    assert 0.3 <= elapsed < 2.0
    assert "'b'" in late.message and late.retry_after_s >= 1
    assert "1 loads already wait" in full.message
    assert result == "loaded"
