"""Slot placement: busy slots stay adjacent, cached prefixes are copied rather than lost."""

from __future__ import annotations

import threading

from hearth.core.sampling import SamplingParams
from hearth.engine.placement import KvCopy, count_runs, place
from hearth.engine.slots import Job, Slot

PROMPT = list(range(100, 300))


def busy_job() -> Job:
    return Job(tokens=[1], params=SamplingParams(), sink=lambda event: None)


def slots(n: int, busy: set[int] = frozenset(), cached: dict[int, list[int]] | None = None,
          last_used: dict[int, float] | None = None) -> list[Slot]:  # fmt: skip
    result = []
    for i in range(n):
        slot = Slot(seq_id=i, cached=list((cached or {}).get(i, [])))
        slot.last_used = (last_used or {}).get(i, 0.0)
        if i in busy:
            slot.job = busy_job()
        result.append(slot)
    return result


def test_count_runs_is_passes_per_step():
    assert count_runs([]) == 0
    assert count_runs([0, 1, 2, 3]) == 1
    assert count_runs([0, 2, 4, 6]) == 4
    assert count_runs([1, 5, 6, 7]) == 2


def test_empty_engine_takes_the_first_least_recently_used_slot():
    placement = place(slots(4, last_used={0: 5.0}), PROMPT, keep_adjacent=True)
    assert placement.slot.seq_id == 1 and placement.n_common == 0 and not placement.copies


def test_new_request_fills_the_hole_between_busy_slots():
    placement = place(slots(8, busy={0, 2, 3}), PROMPT, keep_adjacent=True)
    assert placement.slot.seq_id == 1


def test_new_request_extends_the_busy_block():
    placement = place(slots(8, busy={2, 3}, last_used={1: 9.0, 4: 1.0}), PROMPT, keep_adjacent=True)
    assert placement.slot.seq_id == 4  # 1 and 4 both keep one run; 4 is least recently used


def test_cached_prefix_in_a_far_slot_is_copied_next_to_the_busy_block():
    layout = slots(8, busy={0, 1}, cached={6: PROMPT[:150]}, last_used={6: 3.0})
    placement = place(layout, PROMPT, keep_adjacent=True)
    assert placement.slot.seq_id == 2
    assert placement.n_common == 150
    assert placement.copies == (KvCopy(source=6, target=2),)


def test_target_cache_worth_keeping_moves_to_the_least_recently_used_slot():
    other = list(range(1000, 1100))
    layout = slots(
        6, busy={0, 1}, cached={2: other, 4: [7] * 80, 5: PROMPT[:150]},
        last_used={2: 8.0, 3: 1.0, 4: 2.0, 5: 3.0},
    )  # fmt: skip
    placement = place(layout, PROMPT, keep_adjacent=True)
    assert placement.slot.seq_id == 2
    # slot 3 is empty, so it takes slot 2's conversation; slot 4's older cache survives too
    assert placement.copies == (KvCopy(2, 3), KvCopy(5, 2))


def test_short_prefix_is_recomputed_not_copied():
    layout = slots(8, busy={0, 1}, cached={6: PROMPT[:20]})
    placement = place(layout, PROMPT, keep_adjacent=True)
    assert placement.slot.seq_id == 2 and placement.n_common == 0 and not placement.copies


def test_a_busy_slot_prefix_is_shared():
    layout = slots(4, busy={0}, cached={0: PROMPT[:120]})
    placement = place(layout, PROMPT, keep_adjacent=True)
    assert placement.slot.seq_id == 1
    assert placement.copies == (KvCopy(0, 1),) and placement.n_common == 120


def test_unified_cache_ignores_adjacency():
    layout = slots(8, busy={0, 1}, cached={6: PROMPT[:150]})
    placement = place(layout, PROMPT, keep_adjacent=False)
    assert placement.slot.seq_id == 6 and placement.n_common == 150 and not placement.copies


def test_arrivals_count_until_settled():
    from hearth.engine.arrivals import Arrivals

    arrivals = Arrivals()
    assert not arrivals.wait_for_change(0.01)  # nothing pending: no wait
    with arrivals.expect() as arrival:
        assert arrivals.pending == 1
        assert not arrivals.wait_for_change(0.01)  # times out: nothing changed
        threading.Timer(0.05, arrivals.settle, [arrival]).start()
        assert arrivals.wait_for_change(5.0)
        assert arrivals.pending == 0
    assert arrivals.pending == 0  # settling twice counts once


def test_shared_system_prompt_is_copied_not_evicting_the_other_conversation():
    system = list(range(5000, 5100))
    layout = slots(4, cached={0: system + list(range(1, 60))}, last_used={0: 4.0})
    placement = place(layout, [*system, 9, 9, 9], keep_adjacent=True)
    assert placement.slot.seq_id == 1
    assert placement.copies == (KvCopy(0, 1),) and placement.n_common == 100


def test_follow_up_turn_returns_to_its_own_slot():
    conversation = PROMPT[:150]
    layout = slots(4, cached={2: conversation, 0: [*PROMPT[:100], 1]})
    placement = place(layout, PROMPT, keep_adjacent=True)
    assert placement.slot.seq_id == 2 and placement.n_common == 150 and not placement.copies


def test_common_prefix_across_block_boundaries():
    from hearth.engine.slots import common_prefix

    base = list(range(2000))
    for cut in (0, 1, 255, 256, 257, 511, 512, 1999):
        other = [*base[:cut], -1, *base[cut + 1 :]]
        assert common_prefix(base, other) == cut
    assert common_prefix(base, base[:700]) == 700
    assert common_prefix([], base) == 0
    assert common_prefix(base, base) == 2000
