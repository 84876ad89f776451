"""Which saved state holds each prefix: the prompt cache's longest-prefix lookup.

A state file is named by the hash of its last full block, but a new prompt often shares
only part of it: the same 50k-token system prompt with another first message. So every
block hash of every file is indexed (hash -> the files whose tokens start with that
prefix), and a prompt walks its own chain from the longest prefix down.

Kept in memory per process; other workers' files are picked up when the folder's mtime
changes (one ``stat`` per lookup, a listing and the new files' tokens when it did).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

SUFFIX = ".kv"
_SETTLE_NS = 2_000_000_000

# A file's block hashes and token count, or None when it is not a valid state named by
# its tokens.
ChainReader = Callable[[Path], tuple[list[bytes], int] | None]
# The name a prompt's first ``n`` tokens would have as a state (prompt_store.state_name).
NameAt = Callable[[int], bytes]


class PromptIndex:
    """Block hash to file names, for one folder. Thread-safe."""

    def __init__(self, folder: Path, chain_of: ChainReader) -> None:
        self._folder = folder
        self._chain_of = chain_of
        self._lock = threading.Lock()
        self._by_hash: dict[bytes, set[bytes]] = {}
        self._files: dict[bytes, int] = {}  # file name -> its number of blocks
        self._lengths: dict[bytes, int] = {}  # file name -> its number of tokens
        self._chains: dict[bytes, list[bytes]] = {}
        self._mtime_ns = -1

    def refresh(self) -> None:
        """Catch up with files other workers added or removed since the last look."""
        try:
            mtime = os.stat(self._folder).st_mtime_ns
            if mtime == self._mtime_ns:
                return
            # A folder's mtime ticks coarsely (milliseconds): a change in the same tick
            # as the last look would go unseen, so a fresh mtime is never trusted.
            settled = time.time_ns() - mtime > _SETTLE_NS
            self._mtime_ns = mtime if settled else -1
            entries = os.listdir(self._folder)
        except OSError:
            return
        present = set()
        for entry in entries:
            if entry.endswith(SUFFIX):
                try:
                    present.add(bytes.fromhex(entry.removesuffix(SUFFIX)))
                except ValueError:
                    continue
        with self._lock:
            known = set(self._files)
        for name in known - present:
            self.discard(name)
        for name in present - known:
            found = self._chain_of(self._folder / f"{name.hex()}{SUFFIX}")
            if found is not None:
                self.add(name, *found)

    def add(self, name: bytes, chain: Sequence[bytes], n_tokens: int) -> None:
        with self._lock:
            if name in self._files:
                return
            self._files[name] = len(chain)
            self._lengths[name] = n_tokens
            self._chains[name] = list(chain)
            for digest in chain:
                self._by_hash.setdefault(digest, set()).add(name)

    def discard(self, name: bytes) -> None:
        with self._lock:
            chain = self._chains.pop(name, [])
            self._files.pop(name, None)
            self._lengths.pop(name, None)
            for digest in chain:
                holders = self._by_hash.get(digest)
                if holders is not None:
                    holders.discard(name)
                    if not holders:
                        del self._by_hash[digest]

    def longest(self, chain: Sequence[bytes]) -> tuple[bytes, int] | None:
        """The file holding the longest prefix of ``chain`` (the smallest such file, as
        it reads fastest) and how many blocks of it match; None when none does."""
        with self._lock:
            for n_blocks in range(len(chain), 0, -1):
                holders = self._by_hash.get(chain[n_blocks - 1])
                if holders:
                    return min(holders, key=lambda n: self._files[n]), n_blocks
        return None

    def extended(self, chain: Sequence[bytes], name_at: NameAt) -> tuple[bytes, int] | None:
        """The file with the most tokens that a prompt extends all of, and that count:
        among the files sharing the prompt's longest block prefix (then shorter ones),
        those whose name the prompt's own first tokens, as many, would have."""
        with self._lock:
            for n_blocks in range(len(chain), 0, -1):
                holders = self._by_hash.get(chain[n_blocks - 1], set())
                lengths = [(self._lengths[n], n) for n in holders]
                fits = [(length, n) for length, n in lengths if name_at(length) == n]
                if fits:
                    length, name = max(fits)
                    return name, length
        return None

    def has(self, name: bytes) -> bool:
        with self._lock:
            return name in self._files
