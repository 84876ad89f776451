"""The pieces of speculative decoding that are pure logic: n-gram lookup and the rule."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hearth.engine.draft_gain import (
    MIN_GAIN,
    StepCost,
    best_draft_length,
    expected_tokens,
)
from hearth.engine.drafters import NgramIndex


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


def linear(extra: float) -> Callable[[int], float]:
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
    beyond = cost.seconds(17)
    assert beyond is not None and 0.050 < beyond < 0.050 + 8 * 0.010  # optimistic beyond


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
    again = cost.seconds(17)
    assert again is not None and again < 1.0  # estimated afresh


def test_step_cost_keeps_the_plain_step_and_scales_below_what_it_knows() -> None:
    cost = StepCost(max_age=10)
    cost.record(17, 0.070)
    assert cost.seconds(1) == pytest.approx(0.070 / 17)  # never dearer than its share
    cost.record(1, 0.010)
    for _ in range(50):  # a slot that drafts every step measures only its long steps
        cost.record(17, 0.070)
    assert cost.seconds(1) == pytest.approx(0.010)  # what drafting is judged against


def test_step_cost_takes_a_fluke_for_one_until_measured_again() -> None:
    cost = StepCost()
    for _ in range(3):
        cost.record(1, 0.0015)
    cost.record(5, 0.077)  # a busy moment, 40 times what 5 tokens should take
    fluke = cost.seconds(5)
    assert fluke is not None and fluke < 0.003  # still worth trying
    cost.record(5, 0.0020)
    assert cost.seconds(5) == pytest.approx(0.0020)  # a quicker sample replaces it
    cost.record(2, 0.0045)  # real structure (a CPU's 2-token step) is believed at once
    assert cost.seconds(2) == pytest.approx(0.0045)


def test_a_fresh_rule_measures_a_plain_step_before_drafting() -> None:
    from hearth.core.model_info import SpecMode
    from hearth.core.sampling import SamplingParams
    from hearth.engine.slots import Job, Slot
    from hearth.engine.speculative import Speculator

    # The rule for a draft model; with none loaded, n-gram proposals stand in for its.
    spec = Speculator(1, SpecMode.DRAFT, draft_max=8)
    slot = Slot(seq_id=0, cached=[1, 2, 3, 1, 2, 3, 1, 2], pending_token=3)
    slot.job = Job(tokens=[1], params=SamplingParams(max_tokens=None), sink=lambda _e: None)
    spec.start(0, enabled=True)
    assert spec.plan([slot], room=64, n_ctx_slot=512) == {}  # nothing measured yet
    spec.record_step(1, 0.010)
    assert spec.plan([slot], room=64, n_ctx_slot=512)[0]  # then drafts on the prior alone


def test_a_slot_that_stopped_drafting_probes_again_with_backoff() -> None:
    from hearth.core.model_info import SpecMode
    from hearth.core.sampling import SamplingParams
    from hearth.engine.slots import Job, Slot
    from hearth.engine.speculative import PROBE_FIRST, Speculator

    # The rule for a draft model; with none loaded, n-gram proposals stand in for its.
    spec = Speculator(1, SpecMode.DRAFT, draft_max=8)
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
    probe fails (drafts from the n-gram index, standing in for a draft model's)."""
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
    # N-gram slots never probe: every generated token already scores the n-grams.
    assert _first_probe("ngram", 3) == -1


def test_with_many_streams_a_draft_must_pay_for_all_of_them() -> None:
    alone = best_draft_length(0.7, linear(0.1), 0.0, 1, 16)
    crowded = best_draft_length(0.7, linear(0.1), 0.0, 1, 16, others=7)
    assert alone > 0 and crowded < alone
    # Where big batches are cheap per token (as measured on the dev CPU), it still pays.
    assert best_draft_length(1.0, linear(0.02), 0.0, 1, 16, others=7) == 16


# --------------------------------------------------------------------------- n-gram

# Step times measured on the dev CPU (32-block target, 1 thread), ms by tokens in the
# decode: a 2-token step costs 3.4 one-token steps and a 17-token one 6.6.
CPU_MS = {1: 5.8, 2: 19.9, 3: 24.0, 4: 25.9, 5: 28.3, 8: 33.7, 9: 38.0, 12: 40.8, 15: 47.5,
          16: 36.2, 17: 38.5}  # fmt: skip


def cpu_ms(n: int) -> float:
    if n in CPU_MS:
        return CPU_MS[n]
    lo = max(m for m in CPU_MS if m < n)
    hi = min(m for m in CPU_MS if m > n)
    return CPU_MS[lo] + (CPU_MS[hi] - CPU_MS[lo]) * (n - lo) / (hi - lo)


def _generate(prompt: list[int], output: list[int], requests: int = 1) -> tuple[float, int, int]:
    """Run the n-gram rule over ``requests`` requests whose sampled tokens will be
    ``output``, as the scheduler would: verify while drafts match, record, and learn
    each step's time (``CPU_MS``) from a fresh start. Returns the last request's
    speed-up over plain decoding, and its tokens drafted and accepted."""
    from hearth.core.model_info import SpecMode
    from hearth.core.sampling import SamplingParams
    from hearth.engine.slots import Job, Slot
    from hearth.engine.speculative import Speculator

    spec = Speculator(1, SpecMode.NGRAM, draft_max=16)
    spec.record_step(1, CPU_MS[1] / 1000)
    speed_up, drafted, accepted = 0.0, 0, 0
    for _ in range(requests):
        slot = Slot(seq_id=0, cached=list(prompt), pending_token=output[0], n_prompt=len(prompt))
        slot.job = Job(tokens=prompt, params=SamplingParams(max_tokens=None), sink=lambda _e: None)
        spec.start(0, enabled=True)
        done, spent, drafted, accepted = 1, 0.0, 0, 0  # output[:done] sampled so far
        while done < len(output):
            draft = spec.plan([slot], room=64, n_ctx_slot=4096).get(0, [])
            kept = 0
            while kept < len(draft) and done + kept < len(output):
                if draft[kept] != output[done + kept]:
                    break
                kept += 1
            if draft:
                spec.record(0, len(draft), kept)
            spent += cpu_ms(1 + len(draft))
            spec.record_step(1 + len(draft), cpu_ms(1 + len(draft)) / 1000)
            drafted, accepted = drafted + len(draft), accepted + kept
            assert slot.pending_token is not None
            slot.cached += [slot.pending_token, *output[done : done + kept]]
            done += kept
            if done < len(output):
                slot.pending_token = output[done]
                done += 1
        speed_up = (len(output) - 1) * CPU_MS[1] / spent
    return speed_up, drafted, accepted


PERIOD = [11, 12, 13, 14, 15, 16, 17, 18]
REPEATED_PROMPT = PERIOD * 24 + PERIOD[:2]  # as in the benchmark's repetitive prompt


def _unrelated(n: int, seed: int) -> list[int]:
    """A random model's output: the prompt's words among others, in no order, so the
    prompt's n-grams come up now and then by chance."""
    import random

    rng = random.Random(seed)
    return [rng.choice([*PERIOD, 30, 31, 32, 33, 34, 35]) for _ in range(n)]


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_ngram_costs_nothing_when_the_output_does_not_follow_the_prompt(seed: int) -> None:
    for requests in (1, 3):  # a fresh server, and one that has learned its step times
        speed_up, drafted, accepted = _generate(REPEATED_PROMPT, _unrelated(128, seed), requests)
        assert speed_up >= 0.97, (requests, drafted, accepted)


def test_ngram_drafts_long_when_the_output_copies_the_prompt() -> None:
    output = (PERIOD * 20)[2:130]  # the continuation the prompt's n-grams propose
    speed_up, drafted, accepted = _generate(REPEATED_PROMPT, output)
    assert accepted > 100 and drafted - accepted <= 16
    assert speed_up > 1.8


def test_ngram_cuts_its_losses_when_the_output_stops_copying() -> None:
    copied = (PERIOD * 8)[2:50]
    speed_up, drafted, accepted = _generate(REPEATED_PROMPT, copied + _unrelated(80, 9))
    assert accepted >= 30
    assert drafted - accepted <= 2 * 16  # a draft or two is lost, then it stops
    assert speed_up > 1.05  # the copied part still pays for the rest
