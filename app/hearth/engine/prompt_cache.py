"""Slots' KV states saved to disk and restored, so a long prompt survives a restart.

The scheduler calls in from its own thread, the only one that may touch the context:
``restore`` when a new request brings a state read for it (``prefetch``), ``after_prompt``
once a slot has evaluated a prompt, ``save_all`` as the model goes away. The state's
bytes are copied out there (llama.cpp's sequence-state API); a writer thread puts them
on disk (``engine/prompt_store.py``) so the decode loop never waits for the disk: not
for the write, nor for the folder's listing (other workers' new files, the size
budget's eviction), nor for marking a file used. On the decode loop, whether the disk
has a state already is asked of what this process knows (``PromptStore.known``); the
writer looks at the folder again before it writes.

A saved state serves every prompt that extends it: files are named by a chain of block
hashes over the tokens (and a hash of any tokens past the last block), seeded with a
key of the model file and the load settings that shape the KV cache. Models whose state
can't be cut back to a prefix (recurrent or hybrid layers, sliding-window attention
without the full-size cache) are not cached; a sliding-window model with the full-size
cache is, but its states serve only prompts that extend all of them, so its prefill
also pauses to save one where the prompt will likely branch (``checkpoint_for``).
Reading a state happens off this thread, as the request is queued
(``engine/prompt_restore.py``); only handing its bytes to llama.cpp happens here.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import os
import queue
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

import llama_cpp

from hearth.core.prompt_cache import PromptCacheSettings
from hearth.engine.model import LlamaModel
from hearth.engine.prompt_restore import PromptReader, window_kept
from hearth.engine.prompt_store import (
    BLOCK_TOKENS,
    PromptStore,
    SavedState,
    block_chain,
    state_name,
)
from hearth.engine.slots import Slot, common_prefix

log = logging.getLogger(__name__)

_KEY_READ = 1 << 20  # bytes read from each end of the model file for its identity
# Saves waiting for the disk (each holds a whole state in memory): two, for a sliding-
# window model's checkpoint and prompt end; while they wait, a busy loop skips saving
# rather than wait.
_QUEUE = 2
# A sliding-window model's prefill is saved this many tokens or more before its end too:
# room for another question after the same long prompt (see checkpoint_for).
_CHECKPOINT_ROOM = 64


def model_key(model: LlamaModel) -> bytes:
    """What a state depends on: the model file (its size, its first and last MiB: the
    header and metadata, and weights), llama.cpp's version, and the load settings that
    change the KV cache's layout (cache types, flash attention, one buffer or one per
    slot, a full-size sliding-window cache). Cheap to compute, and stable when the
    file is moved or copied."""
    cfg = model.config
    digest = hashlib.blake2b(digest_size=16)
    path = Path(cfg.model_path)
    with path.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        digest.update(handle.read(_KEY_READ))
        handle.seek(max(size - _KEY_READ, 0))
        digest.update(handle.read(_KEY_READ))
    settings = (
        size,
        llama_cpp.__version__,
        cfg.cache_type_k,
        cfg.cache_type_v,
        model.flash_attn_type,
        cfg.kv_unified,
        model.swa_full,
    )
    digest.update(repr(settings).encode())
    return digest.digest()


def unsupported_reason(model: LlamaModel) -> str | None:
    """Why this model's slots can't be restored faithfully from a saved prefix, if so."""
    handle = model.model
    if llama_cpp.llama_model_is_recurrent(handle) or llama_cpp.llama_model_is_hybrid(handle):
        return "its recurrent layers keep no per-token state to cut back to a prefix"
    if int(llama_cpp.llama_model_n_swa(handle)) > 0 and not model.swa_full:
        return "its sliding-window layers keep only the last window of a prompt (no swa_full)"
    return None


@dataclass(frozen=True)
class PromptCacheStatus:
    """The folder, its bytes as last counted, the budget, and whether saving is on."""

    folder: Path
    size_bytes: int
    budget: int
    saving: bool


@dataclass
class _Save:
    name: bytes
    chain: list[bytes]
    tokens: list[int]
    payload: ctypes.Array[ctypes.c_uint8]
    size: int


@dataclass(frozen=True)
class _Touch:
    """A saved state the decode loop found it need not save again: its file is marked
    used (its place in the least-recently-used order) by the writer thread."""

    name: bytes


class PromptCache:
    """The disk cache of one loaded model's slots; ``close`` once the scheduler stops."""

    def __init__(
        self,
        model: LlamaModel,
        store: PromptStore,
        key: bytes,
        *,
        min_tokens: int,
    ) -> None:
        self._model = model
        self._store = store
        self._key = key
        self._block = BLOCK_TOKENS  # the store's: its index hashes files with it
        self._min_tokens = max(min_tokens, BLOCK_TOKENS)
        self._queue: queue.Queue[_Save | _Touch | None] = queue.Queue(maxsize=_QUEUE)
        # Names queued: added by the scheduler, dropped by the writer (each one atomic op).
        self._pending: set[bytes] = set()
        self._writer: threading.Thread | None = None
        self._reader = PromptReader(model, store, key, self._block)
        self._swa = int(llama_cpp.llama_model_n_swa(model.model)) > 0

    @classmethod
    def for_model(cls, model: LlamaModel, settings: PromptCacheSettings) -> PromptCache | None:
        """The cache for ``model``, or None (with a log line) when it's off or can't
        serve this model."""
        if not settings.enabled:
            return None
        name = Path(model.config.model_path).name
        reason = unsupported_reason(model)
        if reason is not None:
            log.info("prompt cache off for %s: %s", name, reason)
            return None
        store = PromptStore.open(settings)
        if store is None:
            return None
        try:
            key = model_key(model)
        except OSError as exc:
            log.warning("prompt cache off for %s: cannot read the file (%s)", name, exc)
            return None
        log.info(
            "prompt cache: %s (%.1f of %.1f GiB used)",
            store.folder,
            store.size_bytes / (1 << 30),
            store.budget / (1 << 30),
        )
        return cls(model, store, key, min_tokens=settings.min_tokens)

    @property
    def store(self) -> PromptStore:
        return self._store

    # ------------------------------------------------------------------ restoring
    def watch(self, slots: Sequence[Slot]) -> None:
        """The scheduler's slots: a prompt one of them holds is not read from disk."""
        self._reader.watch(slots)

    def prefetch(self, tokens: Sequence[int]) -> Future[SavedState | None]:
        """Read, off the decode loop, the saved state ``tokens`` extend furthest beyond
        what the slots hold; the job carries it to ``restore``. Never fails."""
        return self._reader.prefetch(tokens)

    def restore(
        self, seq_id: int, tokens: Sequence[int], n_common: int, saved: SavedState | None
    ) -> int | None:
        """Load ``saved`` (read by ``prefetch``) into ``seq_id`` when it covers at least
        a block more of ``tokens`` than the ``n_common`` the slot has. Returns the tokens
        the sequence now holds (at most all but the prompt's last, whose logits are
        needed), or None when the sequence was left as it was. Never raises: the decode
        loop must survive whatever the disk held."""
        if saved is None or not self._reader.unread.take(saved):
            return None  # none, or dropped while its request queued: prefill
        usable = min(common_prefix(saved.tokens, tokens), len(tokens) - 1)
        if usable - n_common < self._block:
            return None  # the slot already has (nearly) as much
        try:
            return self._load(seq_id, saved, usable)
        except Exception:
            log.exception("prompt cache: restoring slot %d failed; prefilling", seq_id)
            llama_cpp.llama_memory_seq_rm(self._model.memory, seq_id, -1, -1)
            return 0

    def _load(self, seq_id: int, saved: SavedState, usable: int) -> int:
        memory, ctx, payload = self._model.memory, self._model.ctx, saved.payload
        llama_cpp.llama_memory_seq_rm(memory, seq_id, -1, -1)
        buffer = (ctypes.c_uint8 * len(payload)).from_buffer(payload)
        read = llama_cpp.llama_state_seq_set_data(ctx, buffer, len(payload), seq_id)
        if read != len(payload) or not llama_cpp.llama_memory_seq_rm(memory, seq_id, usable, -1):
            # The file checked out, so it is kept: a shared KV buffer may just be full.
            log.warning("prompt cache: llama.cpp could not load %s into slot %d; prefilling",
                        saved.name.hex(), seq_id)  # fmt: skip
            llama_cpp.llama_memory_seq_rm(memory, seq_id, -1, -1)
            return 0
        if not window_kept(self._model, seq_id, usable):
            log.info("prompt cache: %s holds the sliding window of %d tokens, not of the "
                     "%d this prompt shares; prefilling", saved.name.hex(),
                     len(saved.tokens), usable)  # fmt: skip
            llama_cpp.llama_memory_seq_rm(memory, seq_id, -1, -1)
            return 0
        log.info("prompt cache: restored %d tokens into slot %d", usable, seq_id)
        return usable

    # ------------------------------------------------------------------ saving
    @property
    def checkpoints(self) -> bool:
        """Whether prefills pause at a checkpoint (``checkpoint_for``): a sliding-window
        model's do, so a hint of where the prompt may branch is worth working out."""
        return self._swa

    @property
    def min_tokens(self) -> int:
        """The shortest prompt state worth saving."""
        return self._min_tokens

    def checkpoint_for(self, tokens: Sequence[int], n_common: int, branch_at: int = 0) -> int:
        """Where a sliding-window model's prefill of ``tokens`` pauses to save its state
        (0: nowhere). Its state serves only prompts that extend all of it, so the end of
        the prompt alone would not serve the same text with another question. The state
        at ``branch_at`` does when it is given (a chat's last message starts there:
        ``Job.branch_at``); else the one at a block boundary at least
        ``_CHECKPOINT_ROOM`` tokens before the end."""
        if not self._swa:
            return 0
        if self._min_tokens <= branch_at < len(tokens) and branch_at > n_common:
            return branch_at
        point = (len(tokens) - _CHECKPOINT_ROOM) // self._block * self._block
        return point if point >= self._min_tokens and point > n_common else 0

    def after_prompt(self, slot: Slot) -> None:
        """``slot`` has just evaluated its prompt, or its checkpoint: save it unless the
        disk already has all but fewer than ``min_tokens`` of it. Never waits for the
        disk."""
        try:
            self._save(slot.seq_id, slot.cached, wait=False)
        except Exception:
            log.exception("prompt cache: saving slot %d failed", slot.seq_id)

    def save_all(self, slots: Sequence[Slot]) -> None:
        """Save every slot worth it, waiting for room in the queue: the model is going."""
        for slot in slots:
            try:
                self._save(slot.seq_id, slot.cached, wait=True)
            except Exception:
                log.exception("prompt cache: saving slot %d failed", slot.seq_id)

    def _save(self, seq_id: int, cached: Sequence[int], *, wait: bool) -> None:
        if len(cached) < self._min_tokens or not self._store.saving:
            return
        if min(cached) < 0:  # an image's stand-in ids: its embeddings are not tokens
            log.info("prompt cache: slot %d holds an image; not saved", seq_id)
            return
        chain = block_chain(self._key, cached, self._block)
        name = state_name(self._key, cached, chain)
        if name in self._pending:
            return
        # No disk access here, on the decode loop: what this process knows of the folder
        # (the writer thread lists it, for other workers' files, before writing).
        covering = self._covering(name, chain, self._store.known(chain))
        if covering is not None:
            self._mark_used(covering)
            return
        if not wait and self._queue.full():
            log.debug("prompt cache: the disk is behind; slot %d not saved", seq_id)
            return
        ctx = self._model.ctx
        size = int(llama_cpp.llama_state_seq_get_size(ctx, seq_id))
        payload = (ctypes.c_uint8 * size)()
        written = int(llama_cpp.llama_state_seq_get_data(ctx, payload, size, seq_id))
        if written == 0:
            log.warning("prompt cache: llama.cpp gave no state for slot %d", seq_id)
            return
        self._pending.add(name)
        self._start_writer()
        self._queue.put(_Save(name, chain, list(cached), payload, written))

    def _covering(
        self, name: bytes, chain: Sequence[bytes], found: tuple[bytes, int] | None
    ) -> bytes | None:
        """A saved file that makes saving the state ``name`` (of ``chain``) again add
        next to nothing, else None: ``found``, the file sharing the most of ``chain``,
        if it holds all but fewer than ``min_tokens`` of it."""
        if self._swa:  # a sliding-window state serves no prefix of itself: its own name
            return name if self._store.known_name(name) else None
        room = self._min_tokens - 1
        if found is not None and (len(chain) - found[1]) * self._block <= room:
            return found[0]
        return None

    def _mark_used(self, name: bytes) -> None:
        """Refresh ``name``'s place in the LRU order, on the writer thread; skipped
        while the queue is full of saves (an order a little off costs little)."""
        self._start_writer()
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(_Touch(name))

    def _start_writer(self) -> None:
        if self._writer is None:
            self._writer = threading.Thread(
                target=self._write_loop, name="hearth-prompt-cache", daemon=True
            )
            self._writer.start()

    def _write_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if isinstance(item, _Touch):
                self._store.touch(item.name)
                continue
            try:
                self._write(item)
            except Exception:
                log.exception("prompt cache: saving failed")
            finally:
                self._pending.discard(item.name)

    def _write(self, item: _Save) -> None:
        """Write ``item`` (then evict down to the budget), unless the folder, looked at
        again here, already has it: another worker may have saved it meanwhile."""
        found = self._store.find(item.chain)  # a listing: other workers' files too
        covering = self._covering(item.name, item.chain, found)
        if covering is not None:
            self._store.touch(covering)
            return
        view = memoryview(item.payload).cast("B")[: item.size]
        if self._store.write(item.name, self._key, item.tokens, view):
            log.info("prompt cache: saved %d tokens (%d bytes)", len(item.tokens), item.size)

    def close(self) -> None:
        """Stop reading; wait for the saves in flight to reach the disk."""
        self._reader.close()
        if self._writer is not None:
            self._queue.put(None)
            self._writer.join()
            self._writer = None
