"""The ``.part`` file of one download: written, hashed, truncated, verified, renamed.

Every method here is blocking and runs on the download's single I/O thread, in order,
so a cancelled coroutine never leaves a write half-done. The object remembers how many
bytes are written and hashed (``offset``) and the running hash, so a retry or a resume in
the same process does not re-read the prefix; after a restart the prefix is re-hashed.

Disk full while writing: the ``.part`` is truncated back to the last fully written and
hashed byte and the sidecar stays, so the download resumes from there once space is
freed; if even the truncation fails, both files are deleted. The final name is given by
``os.replace`` only after the size and checksum matched.

A lock file (``<dest>.part.lock``, an OS advisory lock released when the process dies)
stops two Hearth processes (say the GUI and ``hearth pull``) writing the same ``.part``.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, BinaryIO

from hearth.config.file_lock import try_lock
from hearth.core.units import format_bytes
from hearth.hub.errors import ChecksumMismatchError, DiskFullError, DownloadError
from hearth.hub.remote import RemoteFile
from hearth.hub.sidecar import part_path, read_sidecar, remove_partial, write_sidecar

log = logging.getLogger(__name__)

FileOpener = Callable[[Path], BinaryIO]
SpaceCheck = Callable[[Path, int], None]
REHASH_BLOCK = 4 * 1024 * 1024


def default_opener(path: Path) -> BinaryIO:
    """Open an existing ``.part`` for reading and writing, unbuffered."""
    return open(path, "r+b", buffering=0)


def lock_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".part.lock")


def discard_files(dest: Path) -> None:
    """Delete every trace of an unfinished download of ``dest``."""
    remove_partial(dest)
    lock_path(dest).unlink(missing_ok=True)


def _new_hasher(sha256: str | None, size: int) -> Any:
    if sha256 is not None:
        return hashlib.sha256()
    hasher = hashlib.sha1()  # git blob id: sha1 of "blob <size>\0" + content
    hasher.update(b"blob %d\0" % size)
    return hasher


def _write_all(handle: BinaryIO, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = handle.write(view)
        if written is None:  # a buffered file took everything
            return
        if written <= 0:
            raise OSError(errno.EIO, "the file system accepted no bytes")
        view = view[written:]


def _fsync_dir(folder: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:  # some file systems cannot sync a directory; the rename still stands
        pass
    finally:
        os.close(fd)


class PartFile:
    """Blocking operations on ``<dest>.part``; see the module docstring."""

    def __init__(self, dest: Path, filename: str, opener: FileOpener = default_opener) -> None:
        self.dest, self.filename, self._opener = dest, filename, opener
        self.part = part_path(dest)
        self.hasher: Any = None
        self.offset = -1  # bytes written and hashed; -1: unknown, re-hash from disk
        self.total: int | None = None
        self._lock: IO[bytes] | None = None

    # ------------------------------------------------------------------ setup

    def already_there(self, remote: RemoteFile) -> bool:
        """The final file exists at this size and no newer download is pending."""
        return (
            self.dest.is_file()
            and self.dest.stat().st_size == remote.size
            and read_sidecar(self.dest) is None
            and not self.part.exists()
        )

    def prepare(self, remote: RemoteFile, space_check: SpaceCheck) -> None:
        """Check disk space, take the lock, then match the sidecar with the server.

        Nothing is created before the space check passes."""
        self.total = remote.size
        wanted = remote.to_sidecar()
        current = read_sidecar(self.dest)
        usable = current is not None and current.matches(wanted) and self.part.exists()
        have = self.part.stat().st_size if usable else 0
        space_check(self.dest, max(0, remote.size - have))
        self.dest.parent.mkdir(parents=True, exist_ok=True)
        self._take_lock()
        current = read_sidecar(self.dest)  # again, now that we hold the lock
        if current is not None and not current.matches(wanted):
            log.info(
                "%s changed on the Hub (etag %s -> %s); restarting from 0",
                self.filename,
                current.etag,
                wanted.etag,
            )
            remove_partial(self.dest)
            current = None
        if current is None and self.part.exists():
            log.info("discarding %s: no matching download state", self.part)
            self.part.unlink()
        have = self.part.stat().st_size if self.part.exists() else 0
        if have > remote.size:
            self.part.unlink()
            have = 0
        if current is None or self.offset > have:
            self.hasher, self.offset = None, -1
        if current != wanted:
            write_sidecar(self.dest, wanted)
        self.part.touch(exist_ok=True)

    def _take_lock(self) -> None:
        if self._lock is not None:
            return
        handle = open(lock_path(self.dest), "a+b")  # noqa: SIM115 - held until release()
        if not try_lock(handle):
            handle.close()
            raise DownloadError(
                f"{self.filename} is already being downloaded by another Hearth process "
                "(the app or the command line). Wait for it, or stop it first."
            )
        self._lock = handle

    def release(self, *, delete_lock: bool = False) -> None:
        """Let go of the cross-process lock (and remove its file when done for good)."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None
        if delete_lock:
            lock_path(self.dest).unlink(missing_ok=True)

    def discard(self) -> None:
        """Delete ``.part``, sidecar and lock: a cancelled download leaves nothing."""
        self.release()
        discard_files(self.dest)
        self.hasher, self.offset = None, -1

    # ------------------------------------------------------------------ writing

    def open(self, remote: RemoteFile) -> BinaryIO:
        """Open the ``.part`` positioned after its verified prefix (re-hashing if needed)."""
        handle = self._opener(self.part)
        try:
            on_disk = self.part.stat().st_size
            if self.hasher is None or self.offset != on_disk:
                self._rehash(handle, on_disk, remote)
            handle.seek(self.offset)
        except BaseException:
            handle.close()
            raise
        return handle

    def _rehash(self, handle: BinaryIO, on_disk: int, remote: RemoteFile) -> None:
        if on_disk > 0:
            log.info("re-checking the %s already downloaded", format_bytes(on_disk))
        hasher = _new_hasher(remote.sha256, remote.size)
        handle.seek(0)
        done = 0
        while done < on_disk:
            block = handle.read(min(REHASH_BLOCK, on_disk - done))
            if not block:
                break
            hasher.update(block)
            done += len(block)
        handle.truncate(done)
        self.hasher, self.offset = hasher, done

    def restart(self, handle: BinaryIO, remote: RemoteFile) -> None:
        """Empty the ``.part`` (the server ignored our Range and sends from byte 0)."""
        handle.seek(0)
        handle.truncate(0)
        self.hasher, self.offset = _new_hasher(remote.sha256, remote.size), 0

    def reset(self) -> None:
        """Forget the prefix: the next attempt starts from an empty ``.part``."""
        self.part.unlink(missing_ok=True)
        self.part.touch()
        self.hasher, self.offset = None, -1

    def append(self, handle: BinaryIO, data: bytes) -> None:
        try:
            _write_all(handle, data)
        except OSError as exc:
            self._after_write_error(handle, exc)
        self.hasher.update(data)
        self.offset += len(data)

    def _after_write_error(self, handle: BinaryIO, exc: OSError) -> None:
        folder = self.dest.parent
        try:  # put the .part back to the bytes we know are written and hashed
            handle.truncate(self.offset)
            handle.seek(self.offset)
            kept = True
        except OSError:
            self.discard()
            kept = False
        outcome = (
            f"The {format_bytes(self.offset)} already downloaded are kept: free up space, "
            "then resume (or cancel to delete them)."
            if kept
            else "The partial download was deleted."
        )
        if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
            still = format_bytes((self.total or 0) - max(0, self.offset))
            raise DiskFullError(
                f"The disk is full: could not write {self.filename} to {folder} "
                f"({still} still to download). {outcome}"
            ) from exc
        raise DownloadError(
            f"Could not write {self.filename} to {folder}: {exc}. {outcome}"
        ) from exc

    # ------------------------------------------------------------------ finishing

    def finish(self, remote: RemoteFile, repo_id: str) -> None:
        """Verify size and checksum; then fsync and atomically give the final name."""
        got = self.hasher.hexdigest() if self.hasher is not None else ""
        expected = remote.sha256 or remote.git_oid or ""
        kind = "sha256" if remote.sha256 else "git blob id"
        if self.offset != remote.size or got.lower() != expected.lower():
            self.discard()
            raise ChecksumMismatchError(
                f"{self.filename} from {repo_id} failed verification: expected {kind} "
                f"{expected}, got {got or 'nothing'} ({format_bytes(remote.size)} expected). "
                "The damaged download was deleted and not installed. Download it again; if "
                "this repeats, the copy on the server or a proxy in between is corrupt."
            )
        with open(self.part, "r+b") as handle:
            os.fsync(handle.fileno())
        os.replace(self.part, self.dest)
        _fsync_dir(self.dest.parent)
        remove_partial(self.dest)  # only the sidecar is left at this point
        self.release(delete_lock=True)
        log.info("downloaded and verified %s (%s %s)", self.dest, kind, expected)
