"""States read ahead for queued requests are bounded in memory: past two full slots'
worth of KV, the oldest unread ones are dropped (their bytes freed), and their requests
prefill; a state being restored is never dropped."""

from __future__ import annotations

import gc

from hearth.engine.prompt_restore import HeldStates
from hearth.engine.prompt_store import SavedState

SLOT_TOKENS = 100


def state(tag: int, n_tokens: int, n_bytes: int) -> SavedState:
    return SavedState(bytes([tag]) * 16, list(range(n_tokens)), bytearray(n_bytes))


def test_past_two_slots_of_kv_the_oldest_unread_state_is_dropped() -> None:
    held = HeldStates(SLOT_TOKENS)
    a, b, c = state(1, 100, 1000), state(2, 50, 500), state(3, 100, 1000)  # 10 B a token
    held.admit(a)
    held.admit(b)
    assert held.limit == 2 * SLOT_TOKENS * 10 and held.bytes == 1500
    held.admit(c)  # 2500 bytes: a, the oldest, goes
    assert a.dropped and len(a.payload) == 0
    assert not b.dropped and not c.dropped and held.bytes == 1500
    assert not held.take(a)  # its request prefills
    assert held.take(b) and held.bytes == 1000
    d = state(4, 100, 1000)
    held.admit(d)
    assert not c.dropped and held.bytes == 2000  # at the cap, not past it


def test_a_state_being_restored_is_never_dropped_and_leaves_the_count() -> None:
    held = HeldStates(SLOT_TOKENS)
    a = state(1, 100, 1000)
    held.admit(a)
    assert held.take(a) and held.bytes == 0
    for tag in range(2, 6):
        held.admit(state(tag, 100, 1000))
    assert not a.dropped and len(a.payload) == 1000


def test_a_state_no_request_holds_any_more_leaves_the_count() -> None:
    held = HeldStates(SLOT_TOKENS)
    a, b = state(1, 100, 1000), state(2, 100, 1000)
    held.admit(a)
    held.admit(b)
    del a  # its request was cancelled in the queue
    gc.collect()
    assert held.bytes == 1000
    c = state(3, 100, 1000)
    held.admit(c)
    assert not b.dropped and held.bytes == 2000


def test_a_state_wanted_again_after_its_restore_counts_again_and_a_dropped_one_does_not() -> None:
    held = HeldStates(SLOT_TOKENS)
    a = state(1, 100, 1000)
    held.admit(a)
    assert held.take(a)
    held.admit(a)  # another request on the same prompt, while the first still holds it
    assert held.bytes == 1000
    a.drop()
    fresh = HeldStates(SLOT_TOKENS)
    fresh.admit(a)
    assert fresh.bytes == 0
