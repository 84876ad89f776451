"""The prompt cache's folder: saved KV states as files, verified, bounded, shared safely.

One file per saved state, named by a hash of all its tokens (``state_name``: the chain
of its token blocks, ``block_chain``, and any tokens past the last full block): a
prompt finds every state it shares blocks with by hashing its own blocks, and whether
it extends all of one by hashing its own tokens to that state's length. A
file is a fixed header (magic, version, the model key, the name, the token count, the
payload length and a CRC-32 over tokens and payload), the tokens, then llama.cpp's
sequence state. Nothing reaches llama.cpp unless all of it checks out; a file that
doesn't is a miss and is deleted.

Several workers may share the folder: files appear by atomic rename of a fsynced temp
file, eviction (least recently used first, by mtime, which a hit refreshes) runs under
a lock file, and a file vanishing under any step is just a miss. A write that fails (a
read-only folder, a full disk) turns saving off with one log line; reading goes on.

No llama.cpp here: the engine side is ``engine/prompt_cache.py``.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import shutil
import struct
import sys
import tempfile
import threading
import time
import zlib
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from hearth.config.file_lock import try_lock, unlock
from hearth.core.prompt_cache import PromptCacheSettings
from hearth.engine.prompt_index import SUFFIX, NameAt, PromptIndex

log = logging.getLogger(__name__)

MAGIC = b"HEARTHKV"
VERSION = 2  # 2: a state past a block boundary is named by all its tokens
BLOCK_TOKENS = 256
_HEADER = struct.Struct("<8sI16s16sIQI")  # magic, version, key, name, n_tokens, len, crc
_TOKEN = struct.Struct("<i")
_STALE_TEMP_S = 3600.0  # a temp file this old belongs to a writer that died


def block_chain(key: bytes, tokens: Sequence[int], block: int = BLOCK_TOKENS) -> list[bytes]:
    """One hash per full block of ``tokens``, each over the previous hash and the block,
    starting from ``key``: hash ``i`` names the first ``(i + 1) * block`` tokens."""
    chain = []
    previous = key
    for start in range(0, len(tokens) - block + 1, block):
        digest = hashlib.blake2b(previous, digest_size=16)
        digest.update(_token_bytes(tokens[start : start + block]))
        previous = digest.digest()
        chain.append(previous)
    return chain


def state_name(key: bytes, tokens: Sequence[int], chain: Sequence[bytes] | None = None) -> bytes:
    """The name of the state holding exactly ``tokens``: its chain's last hash when it
    ends on a block boundary, else a hash of that (or of ``key``) and the tokens after
    it. So states of different lengths never share a name, and a prompt extends a state
    exactly when its own first ``len(state)`` tokens have the state's name. ``chain``:
    ``block_chain(key, tokens)`` when the caller has it already."""
    chain = block_chain(key, tokens) if chain is None else chain
    done = len(chain) * BLOCK_TOKENS
    if done == len(tokens) and chain:
        return chain[-1]
    digest = hashlib.blake2b(chain[-1] if chain else key, digest_size=16)
    digest.update(b"tail")
    digest.update(_token_bytes(tokens[done:]))
    return digest.digest()


def _token_bytes(tokens: Sequence[int]) -> bytes:
    """Token ids as little-endian int32, the file's and the hashes' one layout."""
    values = array("i", tokens)
    if sys.byteorder != "little":
        values.byteswap()
    return values.tobytes()


@dataclass
class SavedState:
    """A verified file's content: its name, the tokens its state holds and llama.cpp's
    bytes. ``dropped``: its bytes were let go before it was restored (see
    ``prompt_restore.HeldStates``); its request prefills instead."""

    name: bytes
    tokens: list[int]
    payload: bytearray
    dropped: bool = False

    def drop(self) -> None:
        """Free the bytes now, whoever still refers to this state. A restore that has
        already taken them keeps its own reference until it is done."""
        self.payload = bytearray()
        self.dropped = True


class PromptStore:
    """The folder of saved states, with its size budget. Thread-safe: the reader thread
    looks up and reads, the writer thread looks up, writes and evicts; the scheduler
    thread only asks what is ``known``, which touches no disk."""

    def __init__(self, folder: Path, budget: int) -> None:
        self.folder = folder
        self.budget = budget
        self._lock = threading.Lock()
        self._saving = True
        self._bytes = self._scan_bytes()
        self._index = PromptIndex(folder, self._chain_of)

    @classmethod
    def open(cls, settings: PromptCacheSettings) -> PromptStore | None:
        """The store in the settings' folder (created if missing), or None with a log
        line when it is off or the folder cannot be made."""
        folder = settings.folder
        if folder is None:
            return None
        try:
            folder.mkdir(parents=True, exist_ok=True)
            free = shutil.disk_usage(folder).free
        except OSError as exc:
            log.warning("prompt cache off: cannot use %s (%s)", folder, exc.strerror or exc)
            return None
        return cls(folder, settings.budget(free))

    # ------------------------------------------------------------------ reading
    @property
    def saving(self) -> bool:
        return self._saving

    @property
    def size_bytes(self) -> int:
        """The files' total size as this process last counted it."""
        return self._bytes

    def path_for(self, name: bytes) -> Path:
        return self.folder / f"{name.hex()}{SUFFIX}"

    def find(self, chain: Sequence[bytes]) -> tuple[bytes, int] | None:
        """The saved state holding the longest prefix of ``chain`` (a prompt's block
        hashes) and how many blocks of it match; None when no state shares a block."""
        self._index.refresh()
        return self._index.longest(chain)

    def known(self, chain: Sequence[bytes]) -> tuple[bytes, int] | None:
        """As :meth:`find`, from what this process has seen of the folder so far: no
        disk access, for the decode loop (the writer thread looks again, with a
        listing, before it writes)."""
        return self._index.longest(chain)

    def extended(self, chain: Sequence[bytes], name_at: NameAt) -> tuple[bytes, int] | None:
        """The longest saved state that a prompt extends all of, and its tokens; the
        prompt's ``chain`` and ``name_at(n)``, the name its first ``n`` tokens would have
        (``state_name``). For sliding-window models, whose states serve no shorter
        prefix."""
        self._index.refresh()
        return self._index.extended(chain, name_at)

    def known_name(self, name: bytes) -> bool:
        """Whether this process has seen a state ``name`` in the folder (no disk access)."""
        return self._index.has(name)

    def touch(self, name: bytes) -> bool:
        """Mark the file ``name`` as just used; False when there is none."""
        try:
            os.utime(self.path_for(name))
        except OSError:
            return False
        return True

    def read(self, name: bytes, key: bytes) -> SavedState | None:
        """The state saved under ``name`` for the model ``key``, verified; None when
        there is none. A file that fails a check is deleted."""
        path = self.path_for(name)
        try:
            with path.open("rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                state, problem = _read_verified(handle, size, name, key)
        except FileNotFoundError:
            self._index.discard(name)  # another worker evicted it
            return None
        except OSError as exc:
            log.warning("prompt cache: cannot read %s: %s", path.name, exc)
            self._index.discard(name)  # not offered again by this process
            return None
        if state is None:
            log.warning("prompt cache: %s is %s; deleted", path.name, problem)
            self._delete(path)
            return None
        self.touch(name)
        return state

    # ------------------------------------------------------------------ writing
    def write(self, name: bytes, key: bytes, tokens: Sequence[int], payload: memoryview) -> bool:
        """Save atomically under ``name``; then evict down to the budget. False when
        saving is off or the write failed (which turns saving off)."""
        if not self._saving:
            return False
        body = _token_bytes(tokens)
        crc = zlib.crc32(payload, zlib.crc32(body))
        header = _HEADER.pack(MAGIC, VERSION, key, name, len(tokens), len(payload), crc)
        path = self.path_for(name)
        tmp: str | None = None
        try:
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=f".{name.hex()}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                handle.write(header)
                handle.write(body)
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
            tmp = None
            self._index.add(name, block_chain(key, tokens), len(tokens))
        except OSError as exc:
            self._saving = False
            log.warning(
                "prompt cache: cannot write to %s (%s); saving is off until restart, "
                "saved prompts are still read",
                self.folder,
                exc.strerror or exc,
            )
            return False
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        with self._lock:
            self._bytes += _HEADER.size + len(body) + len(payload)
        self.evict()
        return True

    def evict(self) -> None:
        """Delete least recently used files until the folder fits the budget, under the
        folder's lock file; if another worker holds it, that worker is evicting."""
        if self._bytes <= self.budget:
            return
        with _folder_lock(self.folder / ".evict.lock") as held:
            if not held:
                return
            entries = sorted(self._entries(), key=lambda e: e[0])  # oldest first
            total = sum(size for _, size, _ in entries)
            for _, size, path in entries:
                if total <= self.budget:
                    break
                if self._delete(path):
                    log.info("prompt cache: evicted %s (%d bytes)", path.name, size)
                total -= size
            with self._lock:
                self._bytes = total

    def _entries(self) -> Iterator[tuple[float, int, Path]]:
        """(mtime, size, path) of every saved state; stale temp files are removed."""
        now = time.time()
        try:
            names = os.listdir(self.folder)
        except OSError:
            return
        for entry in names:
            path = self.folder / entry
            try:
                stat = path.stat()
            except OSError:
                continue  # vanished: another worker evicted it
            if entry.endswith(SUFFIX):
                yield stat.st_mtime, stat.st_size, path
            elif entry.endswith(".tmp") and now - stat.st_mtime > _STALE_TEMP_S:
                self._delete(path)

    def _chain_of(self, path: Path) -> tuple[list[bytes], int] | None:
        """The block hashes and token count of the state in ``path`` for the index; a
        file that isn't one, or isn't what its name says, is deleted."""
        found = _file_chain(path)
        if found is not None and found[0].hex() + SUFFIX == path.name:
            return found[1], found[2]
        if path.exists():
            log.warning("prompt cache: %s is not a valid saved state; deleted", path.name)
            self._delete(path)
        return None

    def _scan_bytes(self) -> int:
        return sum(size for _, size, _ in self._entries())

    def _delete(self, path: Path) -> bool:
        if path.name.endswith(SUFFIX):
            with contextlib.suppress(ValueError):
                self._index.discard(bytes.fromhex(path.name.removesuffix(SUFFIX)))
        try:
            path.unlink()
        except OSError:
            return False
        return True


def _file_chain(path: Path) -> tuple[bytes, list[bytes], int] | None:
    """The name, block hashes and token count of the state in ``path``, from its header
    and tokens only (the payload is checked when it is read for a restore); None if it
    isn't one."""
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            head = handle.read(_HEADER.size)
            if len(head) < _HEADER.size:
                return None
            magic, version, key, _, n_tokens, n_payload, _ = _HEADER.unpack(head)
            if magic != MAGIC or version != VERSION:
                return None
            if size != _HEADER.size + n_tokens * _TOKEN.size + n_payload:
                return None
            body = handle.read(n_tokens * _TOKEN.size)
    except OSError:
        return None
    tokens = array("i")
    tokens.frombytes(body)
    if sys.byteorder != "little":
        tokens.byteswap()
    chain = block_chain(key, tokens)
    return state_name(key, tokens, chain), chain, len(tokens)


def verify(path: Path) -> str | None:
    """What is wrong with the file at ``path`` (its key and name taken from itself), or
    None when it would be restored: for checking a folder after the fact."""
    try:
        name = bytes.fromhex(path.name.removesuffix(SUFFIX))
        with path.open("rb") as handle:
            head = handle.read(_HEADER.size)
            key = _HEADER.unpack(head)[2] if len(head) == _HEADER.size else b""
            handle.seek(0)
            state, problem = _read_verified(handle, os.fstat(handle.fileno()).st_size, name, key)
    except (OSError, ValueError) as exc:
        return str(exc)
    return None if state is not None else problem


def _read_verified(
    handle: io.BufferedReader, size: int, name: bytes, key: bytes
) -> tuple[SavedState | None, str]:
    """The file's state if every check passes, else None and what was wrong."""
    head = handle.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None, "truncated"
    magic, version, file_key, file_name, n_tokens, n_payload, crc = _HEADER.unpack(head)
    if magic != MAGIC:
        return None, "not a prompt cache file"
    if version != VERSION:
        return None, f"of format version {version}"
    if file_key != key or file_name != name:
        return None, "from another model or another name"
    if size != _HEADER.size + n_tokens * _TOKEN.size + n_payload:
        return None, "truncated or padded"
    body = handle.read(n_tokens * _TOKEN.size)
    payload = bytearray(n_payload)
    if len(body) != n_tokens * _TOKEN.size or handle.readinto(payload) != n_payload:
        return None, "truncated"
    if zlib.crc32(payload, zlib.crc32(body)) != crc:
        return None, "corrupt (checksum mismatch)"
    tokens = array("i")
    tokens.frombytes(body)
    if sys.byteorder != "little":
        tokens.byteswap()
    if not n_tokens or state_name(key, tokens) != name:
        return None, "not what its name says"
    return SavedState(name, tokens.tolist(), payload), ""


@contextlib.contextmanager
def _folder_lock(path: Path) -> Iterator[bool]:
    """An exclusive, non-blocking lock on ``path`` across processes; yields whether it
    was taken. The OS drops it if the holder dies, so no lock is ever stale."""
    try:
        handle = path.open("a+b")
    except OSError:
        yield False
        return
    with handle:
        if not try_lock(handle):
            yield False
            return
        try:
            yield True
        finally:
            unlock(handle)
