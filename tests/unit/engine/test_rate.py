"""The decode-rate window: bounded however long nobody reads it, and still right."""

from __future__ import annotations

import pytest

from hearth.engine.rate import DecodeRate


def test_window_is_trimmed_as_steps_are_recorded_not_when_read() -> None:
    rate = DecodeRate(window_s=10.0)
    for step in range(100_000):  # 1,000 steps/s for 100 s; the rate is never read
        rate.record(step / 1000, 4)
    assert len(rate) <= 10_001  # only the last 10 s of steps


def test_hard_cap_holds_even_inside_the_window() -> None:
    rate = DecodeRate(window_s=3600.0, max_samples=64)
    for step in range(10_000):
        rate.record(step * 1e-6, 1)
    assert len(rate) == 64


def test_rate_over_the_window() -> None:
    rate = DecodeRate(window_s=10.0)
    for step in range(11):  # 4 tokens every 0.5 s
        rate.record(100.0 + step * 0.5, 4)
    assert rate.tokens_per_s(105.0) == pytest.approx(8.0)
    assert rate.tokens_per_s(200.0) == 0.0  # everything has left the window
    assert DecodeRate().tokens_per_s(1.0) == 0.0
