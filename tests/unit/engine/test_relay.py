"""The relay delivers every job's events in order; uvloop clients bypass it."""

from __future__ import annotations

import asyncio

import pytest

from hearth.core.generation import GenerationEvent, TextDelta
from hearth.core.sampling import SamplingParams
from hearth.engine.relay import EventRelay
from hearth.engine.slots import Job, make_async_sink, wakes_holding_gil


def test_relay_keeps_order_and_drains_on_close():
    received: list[GenerationEvent] = []
    job = Job(tokens=[1], params=SamplingParams(), sink=received.append)
    relay = EventRelay()
    events = [TextDelta(str(i)) for i in range(500)]
    for event in events:
        relay.post(job, event)
    relay.close()
    assert received == events


def test_relay_marks_a_job_whose_loop_is_gone_as_cancelled():
    loop = asyncio.new_event_loop()
    queue: asyncio.Queue[GenerationEvent] = asyncio.Queue()
    job = Job(tokens=[1], params=SamplingParams(), sink=make_async_sink(loop, queue))
    loop.close()
    relay = EventRelay()
    relay.post(job, TextDelta("late"))
    relay.close()
    assert job.cancelled.is_set()


def test_only_uvloop_wakes_holding_the_gil():
    plain = asyncio.new_event_loop()
    try:
        assert not wakes_holding_gil(plain)
    finally:
        plain.close()
    uvloop = pytest.importorskip("uvloop")
    fast = uvloop.new_event_loop()
    try:
        assert wakes_holding_gil(fast)
    finally:
        fast.close()
