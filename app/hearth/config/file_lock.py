"""An advisory, non-blocking lock on an open file, for processes that share a folder.

Two workers may share a prompt-cache folder and a download may be resumed by a second
app; each takes this lock on a file of its own before it writes, and a taken lock means
"someone else is at it". The lock goes with the file handle: closing it releases it.
"""

from __future__ import annotations

import contextlib
import sys
from typing import IO


def try_lock(handle: IO[bytes]) -> bool:
    """Lock ``handle``'s file for this process; False when another holds it."""
    try:
        if sys.platform == "win32":
            import msvcrt

            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        else:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def unlock(handle: IO[bytes]) -> None:
    """Release the lock before the handle is closed (closing releases it too)."""
    with contextlib.suppress(OSError):
        if sys.platform == "win32":
            import msvcrt

            msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
