"""The supervisor's record of what the worker holds, and the reloads it plans after a
crash: most recently used first, each with its own settings, within the count and the
memory budget; ejected and just-in-time models stay out."""

from __future__ import annotations

from pathlib import Path

from hearth.core.model_info import ModelInfo
from hearth.core.residency import LoadedModel, ResidencyLimits
from hearth.supervisor.launch_options import LoadOptions
from hearth.supervisor.recovery import (
    OVER_BUDGET,
    OVER_COUNT,
    Recovery,
    ResidentRecord,
    Returning,
    fit_refusal,
    outside_library_first,
)
from hearth.supervisor.residency_status import ResidencyStatus

MIB = 1024 * 1024
A, B, C = LoadOptions(n_ctx=512), LoadOptions(n_ctx=1024), LoadOptions(n_ctx=2048)


def loaded(name: str, memory: int, *, pinned: bool = True) -> LoadedModel:
    info = ModelInfo(
        id=name, path=Path(f"/models/{name}.gguf"), architecture="llama", n_params=1,
        size_bytes=memory, quantization="Q8_0", n_ctx_train=2048, n_ctx_per_slot=512,
        n_slots=1, n_vocab=32, chat_template=None, has_fim=False, created=0,
    )  # fmt: skip
    return LoadedModel(info, memory, busy_slots=0, pinned=pinned, expires_at=None)


def status(*models: LoadedModel, max_models: int = 3, budget: int = 100 * MIB) -> ResidencyStatus:
    return ResidencyStatus(models, ResidencyLimits(max_models, budget))


def record_of(*models: LoadedModel, **limits: int) -> ResidentRecord:
    record = ResidentRecord()
    record.started(Path("/models/a.gguf"), A, "a")
    record.loaded(Path("/models/b.gguf"), B, "b", 10 * MIB, alone=False)
    record.loaded(Path("/models/c.gguf"), C, "c", 10 * MIB, alone=False)
    record.observe(status(*models, **limits))
    return record


def ids(items: list[Returning]) -> list[str]:
    return [item.model_id for item in items]


def test_most_recent_first_each_with_its_own_settings() -> None:
    # the worker's order: least recently used first (b, then c, then a in use)
    record = record_of(loaded("b", 10 * MIB), loaded("c", 10 * MIB), loaded("a", 10 * MIB))
    plan, left_out = record.plan()
    assert ids(plan) == ["a", "c", "b"] and left_out == []
    assert [item.options for item in plan] == [A, C, B]
    assert plan[0].path == Path("/models/a.gguf") and plan[0].memory_bytes == 10 * MIB


def test_the_count_and_the_budget_leave_the_least_recent_out() -> None:
    models = (loaded("b", 10 * MIB), loaded("c", 30 * MIB), loaded("a", 30 * MIB))
    plan, left_out = record_of(*models, max_models=2).plan()
    assert ids(plan) == ["a", "c"] and [(i.model_id, why) for i, why in left_out] == [
        ("b", OVER_COUNT)
    ]
    plan, left_out = record_of(*models, budget=50 * MIB).plan()
    assert ids(plan) == ["a", "b"]  # c does not fit beside a; the smaller b does
    assert [(i.model_id, why) for i, why in left_out] == [("c", OVER_BUDGET)]


def test_ejected_replaced_and_just_in_time_models_do_not_come_back() -> None:
    record = ResidentRecord()
    record.started(Path("/models/a.gguf"), A, "a")
    record.loaded(Path("/models/b.gguf"), B, "b", MIB, alone=False)
    record.unloaded("a")
    assert ids(record.plan()[0]) == ["b"]
    record.loaded(Path("/models/c.gguf"), C, "c", MIB, alone=True)  # "Replace"
    assert ids(record.plan()[0]) == ["c"]
    record.observe(status(loaded("c", MIB), loaded("jit", MIB, pinned=False)))
    assert ids(record.plan()[0]) == ["c"]  # its next request loads it again
    record.forget("c")  # failed to come back once: not tried again
    assert record.plan() == ([], [])
    record.unloaded(None)
    assert record.residents == ()


def test_a_fresh_worker_with_less_room_refuses_the_next_reload() -> None:
    item = Returning(Path("/models/b.gguf"), "b", B, 40 * MIB)
    assert fit_refusal(status(loaded("a", 50 * MIB)), item) is None
    assert fit_refusal(status(loaded("a", 70 * MIB)), item) == OVER_BUDGET
    assert fit_refusal(status(loaded("a", MIB), max_models=1), item) == OVER_COUNT
    assert fit_refusal(ResidencyStatus((loaded("a", MIB),)), item) is None  # no limits known


def test_recovery_moves_each_model_from_pending() -> None:
    recovery = Recovery(pending=("a", "b", "c")).came_back("a").failed_with("b", "gone")
    assert recovery.pending == ("c",) and not recovery.done
    assert recovery.back == ("a",) and recovery.failed == (("b", "gone"),)
    assert recovery.came_back("c").done


def test_a_started_model_outside_the_library_starts_the_fresh_worker() -> None:
    record = ResidentRecord()
    record.started(Path("/models/a.gguf"), A, "a")  # `hearth PATH`: maybe not listed
    record.loaded(Path("/models/b.gguf"), B, "b", MIB, alone=False)
    record.observe(status(loaded("a", MIB), loaded("b", MIB)))  # b most recently used
    plan, _ = record.plan()
    assert ids(plan) == ["b", "a"] and plan[1].started and not plan[0].started
    assert ids(outside_library_first(plan, lambda path: True)) == ["b", "a"]  # listed
    assert ids(outside_library_first(plan, lambda path: False)) == ["a", "b"]
