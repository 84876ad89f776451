"""The idle clock: when an idle model is due to be unloaded (TTL, keep_alive, in use)."""

from __future__ import annotations

import asyncio

from hearth.server.idle_unload import IdleClock


def test_nothing_expires_without_a_model_or_a_session_time() -> None:
    assert IdleClock(None).expires_in(loaded=True) is None
    clock = IdleClock(60.0)
    assert clock.expires_in(loaded=False) is None
    assert 59.0 < (clock.expires_in(loaded=True) or 0.0) <= 60.0


def test_a_request_in_use_holds_the_whole_session_and_never_expires() -> None:
    clock = IdleClock(0.0)
    with clock.in_use():
        assert clock.expires_in(loaded=True) == 0.0 and clock.expiry(loaded=True) is None
    assert clock.expiry(loaded=True) is not None


def test_keep_alive_applies_to_its_request_and_a_request_without_restores_the_ttl() -> None:
    clock = IdleClock(30.0)
    clock.keep_alive(-1)  # Ollama: keep it loaded
    assert clock.expires_in(loaded=True) is None
    clock.keep_alive(5.0)
    assert clock.session_s == 5.0
    clock.keep_alive(None)
    assert clock.session_s == 30.0


def test_the_timer_unloads_once_due_and_looks_again_while_a_stream_runs() -> None:
    async def scenario() -> list[bool]:
        clock = IdleClock(0.0)
        answers = [False, True]  # a stream still runs the first time, then it is idle
        calls: list[bool] = []
        done = asyncio.Event()

        async def unload_if_idle() -> bool:
            answer = answers[len(calls)]
            calls.append(answer)
            if answer:
                done.set()
            return answer

        timer = asyncio.create_task(
            clock.run(loaded=lambda: not done.is_set(), changing=lambda: False,
                      unload_if_idle=unload_if_idle)
        )  # fmt: skip
        await asyncio.wait_for(done.wait(), 5)
        timer.cancel()
        return calls

    assert asyncio.run(scenario()) == [False, True]
