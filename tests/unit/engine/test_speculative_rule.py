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


def test_high_acceptance_drafts_long_low_acceptance_not_at_all() -> None:
    assert best_draft_length(0.99, 0.05, 1, 16) == 16
    assert best_draft_length(0.1, 0.1, 1, 16) == 0
    medium = best_draft_length(0.7, 0.1, 1, 16)
    assert 2 <= medium <= 8
    # A costlier step (more busy streams, a bigger draft model) drafts less.
    assert best_draft_length(0.7, 0.4, 1, 16) < medium


def test_draft_min_and_max_bound_the_length() -> None:
    assert best_draft_length(0.99, 0.01, 1, 5) == 5
    assert best_draft_length(0.7, 0.1, 12, 16) in (0, *range(12, 17))


def test_no_draft_unless_the_gain_clears_the_margin() -> None:
    k = best_draft_length(0.3, 0.25, 1, 16)
    assert k == 0 or expected_tokens(0.3, k) / (1 + k * 0.25) > MIN_GAIN


def test_step_cost_fits_a_line() -> None:
    cost = StepCost()
    for _ in range(10):
        cost.record(1, 0.010)
        cost.record(9, 0.018)  # 1 ms per extra token, 9 ms fixed
    fit = cost.per_token()
    assert fit is not None
    assert fit[0] == pytest.approx(0.009) and fit[1] == pytest.approx(0.001)
    assert cost.extra(1) == pytest.approx(0.1)
    assert cost.extra(4) == pytest.approx(4 * 0.001 / (0.009 + 4 * 0.001))


def test_step_cost_needs_steps_of_different_sizes() -> None:
    cost = StepCost()
    for _ in range(10):
        cost.record(1, 0.010)
    assert cost.per_token() is None
    assert cost.extra(2) > 0  # the default estimate
