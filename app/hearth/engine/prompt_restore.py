"""Saved prompt states read off the decode loop, and the check that a slot's KV still
serves a prefix.

A state file runs to gigabytes for a long prompt on a big model. Read and verified on
the scheduler thread, it would stall every other slot's stream for as long, so the
lookup and the read happen while the request is being queued (``PromptReader``, one
reader thread: reads don't fight over the disk), and the request reaches the scheduler
with the state in memory; the scheduler thread only hands the bytes to llama.cpp.

Sliding-window layers (Gemma 3, ...): llama.cpp's sequence state holds only the last
window of positions of those layers, whatever the cache keeps. A state cut back to a
shorter prefix would leave them without the window before the cut, silently changing
the output; ``window_kept`` says when a cut is safe, for restored and in-memory KV
alike.

States read ahead wait in memory until their requests reach a slot; with every slot
busy, a queue of requests on different long prompts would hold a state each. They are
bounded (``HeldStates``): past two full slots' worth of KV, the oldest unread ones are
dropped, and their requests prefill.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import llama_cpp

from hearth.engine.model import LlamaModel
from hearth.engine.prompt_store import PromptStore, SavedState, block_chain, state_name
from hearth.engine.slots import Slot, common_prefix

log = logging.getLogger(__name__)


def window_kept(model: LlamaModel, seq_id: int, n_keep: int) -> bool:
    """Whether ``seq_id``, cut to its first ``n_keep`` positions, still has every
    position a token at ``n_keep`` attends to in the sliding-window layers. True for
    models without such layers. (A sliding window of ``n`` sees the ``n - 1`` positions
    before a token; a chunked window never more.)"""
    n_swa = int(llama_cpp.llama_model_n_swa(model.model))
    if n_swa <= 0 or n_keep <= 0:
        return True
    # llama.cpp reports the sliding layers' positions here, which run without a gap
    first = int(llama_cpp.llama_memory_seq_pos_min(model.memory, seq_id))
    last = int(llama_cpp.llama_memory_seq_pos_max(model.memory, seq_id))
    return 0 <= first <= max(0, n_keep - n_swa + 1) and last == n_keep - 1


HELD_SLOTS = 2.0
"""Unread states read ahead are held up to this many full slots' worth of KV."""


class HeldStates:
    """The states read ahead for queued requests and not yet restored ("unread"),
    oldest first, under a cap in bytes: ``slots`` full slots of ``slot_tokens`` tokens,
    at the most bytes per token any state read so far had (a state holds at most one
    slot, so the cap always admits two). Past it, the oldest unread states are dropped:
    their bytes are freed at once, whoever refers to them, and their requests prefill.
    A state no request holds any more (a cancelled one) leaves the count by itself.
    Thread-safe: the reader thread admits, the scheduler thread takes."""

    def __init__(self, slot_tokens: int, slots: float = HELD_SLOTS) -> None:
        self._slot_tokens = slot_tokens
        self._slots = slots
        self._lock = threading.RLock()  # a state's last reference may go while held
        self._unread: OrderedDict[int, tuple[weakref.ref[SavedState], int]] = OrderedDict()
        self._bytes = 0
        self._per_token = 0.0

    @property
    def bytes(self) -> int:
        """The bytes of the unread states."""
        return self._bytes

    @property
    def limit(self) -> int:
        return int(self._slots * self._slot_tokens * self._per_token)

    def admit(self, state: SavedState) -> None:
        """``state`` is handed to a queued request; drop the oldest others past the cap."""
        size = len(state.payload)
        with self._lock:
            if id(state) in self._unread or state.dropped:
                return
            self._per_token = max(self._per_token, size / max(1, len(state.tokens)))
            self._unread[id(state)] = (weakref.ref(state, self._forget(id(state))), size)
            self._bytes += size
            while self._bytes > self.limit and len(self._unread) > 1:
                _, (ref, old_size) = self._unread.popitem(last=False)
                self._bytes -= old_size
                old = ref()
                if old is not None:
                    old.drop()
                    log.info("prompt cache: states read ahead would hold more than %d bytes; "
                             "dropped the oldest unread (%s, %d bytes): its request prefills",
                             self.limit, old.name.hex(), old_size)  # fmt: skip

    def take(self, state: SavedState) -> bool:
        """``state`` is being restored: no longer unread, never dropped from now on.
        False when it was dropped already."""
        with self._lock:
            entry = self._unread.pop(id(state), None)
            if entry is not None:
                self._bytes -= entry[1]
            return not state.dropped

    def _forget(self, key: int) -> Callable[[weakref.ref[SavedState]], None]:
        def gone(ref: weakref.ref[SavedState]) -> None:
            with self._lock:
                entry = self._unread.get(key)
                if entry is not None and entry[0] is ref:
                    del self._unread[key]
                    self._bytes -= entry[1]

        return gone


class PromptReader:
    """Finds and reads the saved state a prompt extends, on its own thread. Requests
    for the same state while one copy is in memory share it. ``close`` before the
    model goes."""

    def __init__(self, model: LlamaModel, store: PromptStore, key: bytes, block: int) -> None:
        self._model = model
        self._store = store
        self._key = key
        self._block = block
        self._slots: Sequence[Slot] = ()
        self._n_swa = int(llama_cpp.llama_model_n_swa(model.model))
        self._closed = threading.Event()
        # States handed out and still held by a queued job: a second request for one
        # shares it rather than read the file again. Only the reader thread adds.
        self._held: weakref.WeakValueDictionary[bytes, SavedState] = (
            weakref.WeakValueDictionary()
        )
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hearth-prompt-read")
        self.unread = HeldStates(model.n_ctx_per_slot)

    def watch(self, slots: Sequence[Slot]) -> None:
        """The scheduler's slots: a prompt they already hold is not read from disk."""
        self._slots = slots

    def prefetch(self, tokens: Sequence[int]) -> Future[SavedState | None]:
        """The saved state holding the longest prefix of ``tokens`` that no slot holds,
        read and verified; None when there is none (or it is no use). Never fails."""
        if len(tokens) - 1 >= self._block and not self._closed.is_set():
            try:
                return self._executor.submit(self._lookup, list(tokens))
            except RuntimeError:  # closed meanwhile: the model is going
                pass
        miss: Future[SavedState | None] = Future()
        miss.set_result(None)
        return miss

    def _lookup(self, tokens: list[int]) -> SavedState | None:
        try:
            return self._find(tokens)
        except Exception:
            log.exception("prompt cache: looking up a saved prompt failed; prefilling")
            return None

    def _find(self, tokens: list[int]) -> SavedState | None:
        last = len(tokens) - 1
        in_memory = self._in_slots(tokens)
        chain = block_chain(self._key, tokens, self._block)
        while chain and not self._closed.is_set():
            found = self._best(tokens, chain)
            if found is None:
                return None
            name, n_blocks, n_shared = found
            if min(n_shared, last) - in_memory < self._block:
                return None  # a slot holds (nearly) as much
            held = self._held.get(name)
            saved = held if held is not None and not held.dropped else None
            saved = saved or self._store.read(name, self._key)
            if saved is None:  # damaged (and deleted) or gone: the next best, if any
                continue
            usable = min(common_prefix(saved.tokens, tokens), last)
            if len(saved.tokens) <= self._model.n_ctx_per_slot and self._window(saved, usable):
                self._held[name] = saved
                self.unread.admit(saved)
                return saved
            chain = chain[: n_blocks - 1]  # a larger context's, or a window past the cut
        return None

    def _best(self, tokens: list[int], chain: list[bytes]) -> tuple[bytes, int, int] | None:
        """The saved state to read for ``tokens``: its name, its blocks and how many of
        the tokens it shares at least. A sliding-window state must be extended whole
        (it serves no shorter prefix), so only such states count for those models."""
        if self._n_swa <= 0:
            found = self._store.find(chain)
            return None if found is None else (found[0], found[1], found[1] * self._block)

        def name_at(n: int) -> bytes:
            if n > len(tokens):
                return b""
            return state_name(self._key, tokens[:n], chain[: n // self._block])

        whole = self._store.extended(chain, name_at)
        return None if whole is None else (whole[0], whole[1] // self._block, whole[1])

    def _window(self, saved: SavedState, usable: int) -> bool:
        """Whether ``saved``, cut to ``usable`` tokens, keeps the sliding window before
        the cut: it holds the last ``n_swa`` positions of its own tokens only. (The
        check after loading, ``window_kept``, is the one that decides.)"""
        n_swa, n_saved = self._n_swa, len(saved.tokens)
        return n_swa <= 0 or n_saved <= n_swa or usable >= n_saved - 1

    def _in_slots(self, tokens: list[int]) -> int:
        """The longest prefix of ``tokens`` a slot holds, as last seen from this thread:
        the scheduler may change it meanwhile (it decides again when the job starts)."""
        longest = 0
        for slot in self._slots:
            try:
                longest = max(longest, common_prefix(slot.cached, tokens))
            except IndexError:  # replaced while compared
                continue
        return longest

    def close(self) -> None:
        """Stop looking up: reads queued return None, the one under way finishes."""
        self._closed.set()
        self._executor.shutdown(wait=True)
