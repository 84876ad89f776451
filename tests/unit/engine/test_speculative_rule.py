"""The pieces of speculative decoding that are pure logic: n-gram lookup and the rule."""

from __future__ import annotations

import pytest

from hearth.engine.drafters import NgramIndex
from hearth.engine.speculative import (
    MIN_GAIN,
    StepCost,
    best_draft_length,
    expected_tokens,
)


def test_ngram_proposes_what_followed_the_latest_match() -> None:
    index = NgramIndex()
    index.extend([1, 2, 3, 9, 1, 2, 3, 7, 8, 5, 1, 2, 3])
    # "1 2 3" last appeared followed by 7 8 5: the latest occurrence wins.
    assert index.propose(3) == [7, 8, 5]


def test_ngram_without_a_match_proposes_nothing() -> None:
    index = NgramIndex()
    index.extend([1, 2, 3, 4, 5, 6])
    assert index.propose(4) == []


def test_ngram_falls_back_to_shorter_matches() -> None:
    index = NgramIndex(sizes=(3, 2))
    index.extend([5, 6, 40, 9, 9, 5, 6])  # no earlier "9 5 6"; "5 6" was followed by 40
    assert index.propose(2) == [40, 9]


def test_ngram_continues_a_repetition_with_its_period() -> None:
    index = NgramIndex()
    index.extend([1, 2, 3, 1, 2, 3, 1, 2])
    assert index.propose(5) == [3, 1, 2, 3, 1]


def test_ngram_index_grows_incrementally() -> None:
    whole, parts = NgramIndex(), NgramIndex()
    tokens = [4, 5, 6, 7, 4, 5, 6, 8, 4, 5]
    whole.extend(tokens)
    for token in tokens:
        parts.extend([token])
    assert whole.propose(4) == parts.propose(4) == [6, 8, 4, 5]
    assert len(parts) == len(tokens)


def test_expected_tokens() -> None:
    assert expected_tokens(1.0, 4) == 5.0
    assert expected_tokens(0.0, 4) == 1.0
    assert expected_tokens(0.5, 1) == pytest.approx(1.5)


def linear(extra: float):
    """Step time with ``k`` more tokens when each costs ``extra`` of a 1-token step."""
    return lambda k: 1.0 + extra * k


def test_high_acceptance_drafts_long_low_acceptance_not_at_all() -> None:
    assert best_draft_length(0.99, linear(0.05), 0.0, 1, 16) == 16
    assert best_draft_length(0.1, linear(0.1), 0.0, 1, 16) == 0
    medium = best_draft_length(0.7, linear(0.1), 0.0, 1, 16)
    assert 2 <= medium <= 8
    # A costlier step (more busy streams, a slower draft model) drafts less.
    assert best_draft_length(0.7, linear(0.4), 0.0, 1, 16) < medium
    assert best_draft_length(0.7, linear(0.1), 0.3, 1, 16) < medium


def test_a_step_cost_jump_at_two_tokens_rules_out_short_drafts() -> None:
    # Measured on the dev CPU: 2 tokens 2.8x, 17 tokens 7.2x a 1-token step.
    measured = {0: 1.0, 1: 2.8, 2: 3.9, 3: 5.6, 8: 8.4, 16: 7.2}

    def step(k: int) -> float:
        return measured.get(k, measured[min(measured, key=lambda m: abs(m - k))])

    assert best_draft_length(1.0, step, 0.025, 1, 16) == 16
    assert best_draft_length(0.75, step, 0.025, 1, 16) == 0


def test_draft_min_and_max_bound_the_length() -> None:
    assert best_draft_length(0.99, linear(0.01), 0.0, 1, 5) == 5
    assert best_draft_length(0.7, linear(0.1), 0.0, 12, 16) in (0, *range(12, 17))


def test_no_draft_unless_the_gain_clears_the_margin() -> None:
    k = best_draft_length(0.3, linear(0.25), 0.0, 1, 16)
    assert k == 0 or expected_tokens(0.3, k) / (1 + k * 0.25) > MIN_GAIN


def test_step_cost_learns_each_size_and_interpolates() -> None:
    cost = StepCost()
    assert cost.seconds(1) is None
    for _ in range(20):
        cost.record(1, 0.010)
        cost.record(9, 0.050)
    assert cost.seconds(1) == pytest.approx(0.010)
    assert cost.seconds(9) == pytest.approx(0.050)
    assert cost.seconds(5) == pytest.approx(0.030)  # between two measured sizes
    assert 0.050 < cost.seconds(17) < 0.050 + 8 * 0.010  # optimistic beyond them


def test_step_cost_follows_recent_steps() -> None:
    cost = StepCost()
    cost.record(1, 0.010)
    for _ in range(30):
        cost.record(1, 0.020)
    assert cost.seconds(1) == pytest.approx(0.020, rel=0.01)


def test_step_cost_forgets_sizes_not_seen_for_long() -> None:
    cost = StepCost(max_age=10)
    cost.record(17, 1.0)  # one slow moment
    for _ in range(11):
        cost.record(1, 0.010)
    assert cost.seconds(17) is not None and cost.seconds(17) < 1.0  # estimated afresh


def test_a_slot_that_stopped_drafting_probes_again_with_backoff() -> None:
    from hearth.core.model_info import SpecMode
    from hearth.core.sampling import SamplingParams
    from hearth.engine.slots import Job, Slot
    from hearth.engine.speculative import PROBE_FIRST, Speculator

    spec = Speculator(1, SpecMode.NGRAM, draft_max=8)
    slot = Slot(seq_id=0, cached=[1, 2, 3, 1, 2, 3, 1, 2], pending_token=3)
    slot.job = Job(tokens=[1], params=SamplingParams(max_tokens=None), sink=lambda _e: None)
    spec.start(0, enabled=True)
    for _ in range(20):  # steps are costly here: 9 tokens take 9 times one
        spec.record_step(1, 0.010)
        spec.record_step(9, 0.090)
    spec.record(0, 8, 0)  # and the drafts fail: the slot stops drafting
    spec.record(0, 8, 0)
    plans = [spec.plan([slot], room=64, n_ctx_slot=512) for _ in range(PROBE_FIRST * 3)]
    drafted_at = [i for i, plan in enumerate(plans) if plan]
    assert drafted_at and drafted_at[0] >= PROBE_FIRST - 1
    assert all(len(plans[i][0]) == 1 for i in drafted_at)  # a probe is one token


def _first_probe(mode_name: str, requests: int) -> int:
    """Steps before the last of ``requests`` sequential requests first drafts, when every
    probe fails (drafts from the n-gram index: the rule is the same for a draft model)."""
    from hearth.core.model_info import SpecMode
    from hearth.core.sampling import SamplingParams
    from hearth.engine.slots import Job, Slot
    from hearth.engine.speculative import PROBE_MAX, Speculator

    spec = Speculator(1, SpecMode(mode_name), draft_max=8)
    for _ in range(20):  # steps are costly here: a draft never pays by estimate alone
        spec.record_step(1, 0.010)
        spec.record_step(2, 0.028)
        spec.record_step(9, 0.090)
    first = -1
    for _ in range(requests):
        slot = Slot(seq_id=0, cached=[1, 2, 3, 1, 2, 3, 1, 2], pending_token=3)
        slot.job = Job(tokens=[1], params=SamplingParams(max_tokens=None), sink=lambda _e: None)
        spec.start(0, enabled=True)
        spec.record(0, 8, 0)  # its drafts fail: it stops drafting
        first = -1
        for step in range(PROBE_MAX * 2):
            plan = spec.plan([slot], room=64, n_ctx_slot=4096)
            if plan:
                spec.record(0, len(plan[0]), 0)  # the probe fails too
                first = step
                break
    return first


def test_a_draft_models_probe_backoff_carries_over_to_the_next_request() -> None:
    from hearth.engine.speculative import PROBE_FIRST

    # A useless draft model: each request would pay a probe; the backoff grows instead.
    assert _first_probe("draft", 1) >= PROBE_FIRST - 1
    assert _first_probe("draft", 3) >= 4 * PROBE_FIRST - 1
    # N-gram drafts depend on the request: each one starts with the short wait.
    assert _first_probe("ngram", 3) < 2 * PROBE_FIRST


def test_with_many_streams_a_draft_must_pay_for_all_of_them() -> None:
    alone = best_draft_length(0.7, linear(0.1), 0.0, 1, 16)
    crowded = best_draft_length(0.7, linear(0.1), 0.0, 1, 16, others=7)
    assert alone > 0 and crowded < alone
    # Where big batches are cheap per token (as measured on the dev CPU), it still pays.
    assert best_draft_length(1.0, linear(0.02), 0.0, 1, 16, others=7) == 16
