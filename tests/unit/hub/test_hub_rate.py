"""Token bucket (global bandwidth cap), speed meter and event throttle."""

from __future__ import annotations

import asyncio
import time

import pytest

from hearth.hub.bandwidth import TokenBucket
from hearth.hub.progress import SpeedMeter, Throttle


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_bucket_charges_exact_deficit() -> None:
    clock = Clock()
    bucket = TokenBucket(1000.0, burst=500.0, clock=clock)
    assert bucket.reserve(250) == pytest.approx(0.25)  # starts empty: no initial burst
    clock.now += 0.25
    assert bucket.reserve(1000) == pytest.approx(1.0)
    clock.now += 10  # idle: credit is capped at the burst
    assert bucket.reserve(500) == 0.0
    assert bucket.reserve(100) == pytest.approx(0.1)


def test_bucket_long_run_rate_is_exact_under_debt() -> None:
    clock = Clock()
    bucket = TokenBucket(1_000_000.0, clock=clock)
    sent = 0
    for _ in range(200):  # two consumers interleaving 64 KiB chunks
        for _consumer in range(2):
            clock.now += bucket.reserve(65536)
            sent += 65536
    assert sent / (clock.now - 100.0) == pytest.approx(1_000_000, rel=0.02)


def test_bucket_unlimited_and_rate_changes() -> None:
    clock = Clock()
    bucket = TokenBucket(None, clock=clock)
    assert bucket.reserve(10**9) == 0.0
    bucket.set_rate(2000)
    assert bucket.rate == 2000.0
    assert bucket.reserve(1000) == pytest.approx(0.5)
    bucket.set_rate(None)
    assert bucket.reserve(10**9) == 0.0
    with pytest.raises(ValueError):
        bucket.set_rate(-1)


def test_bucket_shared_by_concurrent_tasks_in_real_time() -> None:
    async def run() -> float:
        bucket = TokenBucket(2_000_000.0, burst=65536)

        async def consumer() -> None:
            for _ in range(8):
                await bucket.acquire(65536)

        start = time.monotonic()
        await asyncio.gather(consumer(), consumer())
        return time.monotonic() - start

    elapsed = asyncio.run(run())
    expected = 16 * 65536 / 2_000_000.0
    assert expected * 0.9 <= elapsed <= expected * 1.5


def test_speed_meter_and_eta() -> None:
    clock = Clock()
    meter = SpeedMeter(window_s=3.0, clock=clock)
    assert meter.speed == 0.0 and meter.eta(0, 100) is None
    for i in range(10):
        meter.add(i * 1000)
        clock.now += 0.5
    assert meter.speed == pytest.approx(2000.0)
    assert meter.eta(9000, 19000) == pytest.approx(5.0)
    assert meter.eta(9000, None) is None
    meter.reset()
    assert meter.speed == 0.0


def test_throttle_allows_at_most_once_per_interval() -> None:
    clock = Clock()
    throttle = Throttle(0.1, clock=clock)
    passed = 0
    for _ in range(1000):
        passed += throttle.ready()
        clock.now += 0.001
    assert passed == 10
