"""Blocking calls (a small file, the keyring) on a worker thread, for the chat's side of
the MCP host, which runs on the GUI's qasync loop: that loop must never wait on a disk.

Like ``asyncio.to_thread``, but without its insistence on ``get_running_loop()``:
qasync also steps tasks from Qt's own event processing (a dialog's nested loop, a test
that pumps Qt events), where asyncio does not count the loop as running. The GUI's
``ui/threads.in_thread`` does the same for ``ui``; this package may not import ``ui``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def off_loop(func: Callable[..., T], *args: Any) -> T:
    loop = asyncio.get_event_loop()
    return await loop.run_in_executor(None, functools.partial(func, *args))
