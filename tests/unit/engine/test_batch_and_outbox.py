"""What the scheduler puts into one decode, and when its events leave."""

from __future__ import annotations

import queue

from hearth.core.generation import GenerationEvent, TextDelta
from hearth.core.sampling import SamplingParams
from hearth.engine.batch import BatchBuilder, StepBatch, equal_share
from hearth.engine.outbox import EventOutbox
from hearth.engine.slots import Job, Slot


def _job(tokens: list[int], sink: queue.SimpleQueue[GenerationEvent] | None = None) -> Job:
    put = sink.put if sink is not None else (lambda _e: None)
    return Job(tokens=tokens, params=SamplingParams(max_tokens=None), sink=put)


def test_a_decoding_slot_brings_its_drafts_and_a_prefilling_slot_a_prompt_chunk() -> None:
    decoding = Slot(seq_id=0, cached=[5, 6, 7], pending_token=8, n_prompt=3)
    decoding.job = _job([5, 6, 7])
    prefilling = Slot(seq_id=1, cached=[1, 2], n_prompt=6)
    prefilling.job = _job([1, 2, 3, 4, 5, 6])
    idle = Slot(seq_id=2)
    builder = BatchBuilder(32)
    try:
        step = builder.fill([decoding, prefilling, idle], {0: [9, 10]}, budget=3)
        batch = builder.batch
        n = step.n_tokens
        assert n == batch.n_tokens == 3 + 3  # pending + 2 drafts, then 3 prompt tokens
        assert [batch.token[i] for i in range(n)] == [8, 9, 10, 3, 4, 5]
        assert [batch.pos[i] for i in range(n)] == [3, 4, 5, 2, 3, 4]
        assert [batch.seq_id[i][0] for i in range(n)] == [0, 0, 0, 1, 1, 1]
        # Logits where something is sampled: every verified position; no prompt end yet.
        assert [bool(batch.logits[i]) for i in range(n)] == [True] * 3 + [False] * 3
        assert step.outputs == [(decoding, 0, [9, 10])]
        assert step.chunks == [(decoding, [8]), (prefilling, [3, 4, 5])]  # drafts apart

        prefilling.cached += [3, 4, 5]  # as the scheduler does once the decode succeeded
        step = builder.fill([prefilling], {}, budget=8)  # the rest: the prompt's last token
        assert step.n_tokens == 1 and step.outputs == [(prefilling, 0, [])]
        assert builder.batch.token[0] == 6 and bool(builder.batch.logits[0])
    finally:
        builder.free()


def _prefilling(seq_id: int, n_prompt: int) -> Slot:
    slot = Slot(seq_id=seq_id, n_prompt=n_prompt)
    slot.job = _job(list(range(100 * seq_id, 100 * seq_id + n_prompt)))
    return slot


def _applied(step: StepBatch) -> dict[int, int]:
    """Do what the scheduler does once a decode succeeded; the tokens each slot added."""
    added = {}
    for slot, piece in step.chunks:
        slot.cached.extend(piece)
        slot.pending_token = None
        added[slot.seq_id] = len(piece)
    for slot, _, _ in step.outputs:  # its prompt ended: it decodes from now on
        slot.pending_token = 7
    return added


def test_simultaneous_prompts_of_unequal_length_prefill_in_equal_chunks() -> None:
    # llama.cpp puts the same number of tokens of each sequence in one forward pass:
    # ragged chunks (5, 7, 6, 9) would take four passes, and every first token waits.
    slots = [_prefilling(i, n) for i, n in enumerate([5, 7, 6, 9])]
    builder = BatchBuilder(64)
    try:
        step = builder.fill(slots, {}, budget=64)
        assert _applied(step) == {0: 5, 1: 5, 2: 5, 3: 5}  # one pass; slot 0's prompt ends
        assert [s.seq_id for s, _, _ in step.outputs] == [0]
        # Next step: slot 0 decodes one token; the others add one each: one pass again.
        step = builder.fill(slots, {}, budget=64)
        assert _applied(step) == {0: 1, 1: 1, 2: 1, 3: 1}
        assert [s.seq_id for s, _, _ in step.outputs] == [0, 2]  # slot 2's prompt ends
        step = builder.fill(slots, {}, budget=64)
        assert _applied(step) == {0: 1, 1: 1, 2: 1, 3: 1}
        assert [s.seq_id for s, _, _ in step.outputs] == [0, 1, 2]
        step = builder.fill(slots, {}, budget=64)
        assert _applied(step) == {0: 1, 1: 1, 2: 1, 3: 2}  # the last one alone: whole
        assert all(s.pending_token is not None for s in slots)
    finally:
        builder.free()


def test_equal_share_stays_within_the_budget() -> None:
    assert equal_share([], 64) == 0
    assert equal_share([40, 300], 0) == 0
    assert equal_share([40, 300], 64) == 32  # the budget shared out
    assert equal_share([40, 300], 512) == 40  # no more than the shortest prompt needs
    assert equal_share([40, 300, 9], 2) == 1  # a token each while the budget lasts
    slots = [_prefilling(i, 10) for i in range(3)]
    builder = BatchBuilder(16)
    try:
        assert _applied(builder.fill(slots, {}, budget=2)) == {0: 1, 1: 1}
    finally:
        builder.free()


def test_events_leave_in_order_and_only_when_flushed() -> None:
    received: queue.SimpleQueue[GenerationEvent] = queue.SimpleQueue()
    job = _job([1], received)
    outbox = EventOutbox()
    try:
        for text in "abc":
            outbox.post(job, TextDelta(text))
        assert received.empty()
        outbox.flush()
        got = [received.get(timeout=10) for _ in range(3)]
        assert [e.text for e in got if isinstance(e, TextDelta)] == ["a", "b", "c"]
        outbox.post(job, TextDelta("d"))
    finally:
        outbox.close()  # delivers what is still held
    last = received.get(timeout=10)
    assert isinstance(last, TextDelta) and last.text == "d"
