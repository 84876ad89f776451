"""Holding a read up with a named pipe (FIFO), for tests of work that must not stall.

A FIFO put where a file is expected blocks its reader until a writer opens the other
end and closes it (end of file); the test holds that end to keep the read held up for
exactly as long as it needs, with no sleeps.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

WAIT_S = 60.0  # a bound for each wait on the other side, never a measured delay


def open_other_end(pipe: Path) -> int:
    """The pipe's write end, once a reader has it open (it then blocks on the read).
    Blocking: from async code, ``await asyncio.to_thread(open_other_end, pipe)``."""
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            return os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:  # ENXIO: no reader yet
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
        time.sleep(0.01)
