"""Which slot a new request runs in, and which KV copies make that slot worth using.

With one KV stream per slot (``kv_unified`` off), llama.cpp splits a batch into one
forward pass per run of *consecutive* sequence ids (``split_equal(sequential=true)``):
busy slots {0,1,2,3} decode in one pass, {0,2,4,6} in four, which measured 2.5x slower
per step on the bench model. So placement keeps busy slots adjacent. When the longest
cached prefix for a prompt sits in a slot that would break adjacency, or in a slot
holding another conversation, that slot's KV is copied into the chosen slot (one buffer
copy) instead of being recomputed, and the chosen slot's own cache, if worth keeping,
moves to the least recently used slot first, so eviction stays least-recently-used.

This module is pure bookkeeping; the scheduler performs the copies.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hearth.engine.slots import Slot, common_prefix

# Below this many extra reusable tokens a copy is not worth it: prefilling a few dozen
# tokens costs about what copying a whole KV stream does on a CPU.
MIN_COPY_TOKENS = 64


@dataclass(frozen=True)
class KvCopy:
    """Copy the KV stream of ``source`` over ``target`` (sequence ids)."""

    source: int
    target: int


@dataclass(frozen=True)
class Placement:
    slot: Slot
    n_common: int
    copies: tuple[KvCopy, ...] = ()


def count_runs(seq_ids: Iterable[int]) -> int:
    """The number of forward passes a batch over these sequences takes."""
    ids = set(seq_ids)
    return sum(1 for i in ids if i - 1 not in ids)


def place(
    slots: Sequence[Slot],
    tokens: Sequence[int],
    *,
    keep_adjacent: bool,
    min_copy_tokens: int = MIN_COPY_TOKENS,
) -> Placement:
    """Choose an idle slot for ``tokens``; at least one slot must be idle.

    The target is the candidate whose cache this request destroys least: its own
    conversation (the cache is a prefix of the prompt), else an empty slot, else the
    least recently used. A longer prefix cached anywhere else, even in a busy slot, is
    then copied in, so a shared system prompt never makes conversations evict each other.
    """
    idle = [s for s in slots if not s.busy]
    if not idle:
        raise ValueError("no idle slot")
    candidates = idle
    if keep_adjacent:
        busy = {s.seq_id for s in slots if s.busy}
        runs = {s.seq_id: count_runs(busy | {s.seq_id}) for s in idle}
        fewest = min(runs.values())
        candidates = [s for s in idle if runs[s.seq_id] == fewest]

    shared = {s.seq_id: common_prefix(s.cached, tokens) for s in slots}

    def cost(slot: Slot) -> tuple[bool, int, float]:
        common = shared[slot.seq_id]
        return (len(slot.cached) > common, -common, slot.last_used)

    target = min(candidates, key=cost)
    n_target = shared[target.seq_id]
    source = max(slots, key=lambda s: shared[s.seq_id])
    n_source = shared[source.seq_id]
    if source is target or n_source - n_target < min_copy_tokens:
        return Placement(target, n_target)
    copies = []
    refuge = _refuge(target, idle, source, min_copy_tokens)
    if refuge is not None:
        copies.append(KvCopy(target.seq_id, refuge.seq_id))
    copies.append(KvCopy(source.seq_id, target.seq_id))
    return Placement(target, n_source, tuple(copies))


def _refuge(target: Slot, idle: list[Slot], source: Slot, min_tokens: int) -> Slot | None:
    """An idle slot used less recently than ``target``, to keep target's cache in."""
    if len(target.cached) < min_tokens:
        return None
    older = [s for s in idle if s is not target and s is not source]
    older = [s for s in older if s.last_used < target.last_used or not s.cached]
    if not older:
        return None
    return min(older, key=lambda s: (bool(s.cached), s.last_used))
