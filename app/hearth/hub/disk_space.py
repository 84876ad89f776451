"""Whether a download fits on the disk, counting what other downloads still need.

A download is checked before it starts and again when the Hub tells its real size, on
the download's I/O thread; failing early with the numbers beats a full disk halfway
through a 20 GB file (and a truncated ``.part`` the user must find and delete).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from hearth.core.units import format_bytes
from hearth.hub.errors import InsufficientDiskSpaceError

DiskFree = Callable[[Path], int]
DEFAULT_RESERVE = 64 * 1024 * 1024  # never fill the disk to the last byte


def free_bytes(path: Path) -> int:
    return shutil.disk_usage(path).free


def existing_ancestor(path: Path) -> Path:
    """The nearest folder that exists: the destination's may not be made yet."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return path


class DiskSpaceGuard:
    """Refuses a download that would leave less than ``reserve_bytes`` free."""

    def __init__(self, disk_free: DiskFree = free_bytes, reserve_bytes: int = DEFAULT_RESERVE):
        self._disk_free = disk_free
        self._reserve = reserve_bytes

    def check(self, filename: str, dest: Path, needed: int, others: int) -> None:
        """Raise :class:`InsufficientDiskSpaceError` naming the sizes and the fix when
        ``needed`` bytes for ``dest`` plus ``others`` (bytes still to come for other
        running downloads) do not fit."""
        if needed <= 0:
            return
        probe = existing_ancestor(dest.parent)
        free = self._disk_free(probe)
        if free >= needed + others + self._reserve:
            return
        busy = f", {format_bytes(others)} for other downloads in progress" if others else ""
        raise InsufficientDiskSpaceError(
            f"Not enough free disk space for {filename}: it needs "
            f"{format_bytes(needed)}{busy} and {format_bytes(self._reserve)} to spare, but "
            f"only {format_bytes(free)} is free at {probe}. Free up space or choose another "
            "models folder, then try again."
        )
