"""Run blocking calls on a worker thread from coroutines on the qasync loop.

Like ``asyncio.to_thread``, but it does not insist on ``get_running_loop()``: qasync
also steps tasks from Qt's own event processing (e.g. a dialog's nested loop, or a
test that pumps Qt events), where asyncio does not count the loop as running.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def in_thread(func: Callable[..., T], *args: Any) -> T:
    loop = asyncio.get_event_loop()
    return await loop.run_in_executor(None, functools.partial(func, *args))
