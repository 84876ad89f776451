"""Loads that wait for memory (or a place in the model count) held by busy models.

A load that only busy models stand in the way of waits here, bounded twice: at most
``max_waiting`` loads wait at once (one more is refused at once), and each waits at most
``timeout_s``. Past either bound the request is answered 503 with ``Retry-After``
(:class:`~hearth.core.errors.ModelsBusyError`, in the dialect's own error shape). Each
wait is logged once, naming what it waits for.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from hearth.core.errors import ModelsBusyError

log = logging.getLogger(__name__)

T = TypeVar("T")

RECHECK_S = 0.25
"""How often a waiting load looks again: a slot frees on the scheduler's thread, which
tells the loop nothing, so the wait also looks on its own this often."""


class LoadQueue:
    def __init__(self, *, max_waiting: int, timeout_s: float) -> None:
        self.max_waiting = max_waiting
        self.timeout_s = timeout_s
        self._waiting = 0
        self.changed = asyncio.Event()  # a model finished a request or was unloaded

    @property
    def waiting(self) -> int:
        return self._waiting

    async def run(
        self,
        attempt: Callable[[], Awaitable[T | None]],
        *,
        model_id: str,
        blocked_by: Callable[[], list[str]],
    ) -> T:
        """``attempt()`` until it gives a result (None: still blocked by busy models),
        waiting between attempts within the bounds."""
        result = await attempt()
        if result is not None:
            return result
        if self._waiting >= self.max_waiting:
            raise self._refusal(model_id, blocked_by(), full=True)
        deadline = time.monotonic() + self.timeout_s
        self._waiting += 1
        log.info(
            "load of %s waits for memory held by busy models: %s (%d waiting, up to %.0f s)",
            model_id, ", ".join(blocked_by()) or "none", self._waiting, self.timeout_s,
        )  # fmt: skip
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._refusal(model_id, blocked_by(), full=False)
                self.changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.changed.wait(), min(left, RECHECK_S))
                result = await attempt()
                if result is not None:
                    return result
        finally:
            self._waiting -= 1

    def _refusal(self, model_id: str, blockers: list[str], *, full: bool) -> ModelsBusyError:
        names = ", ".join(f"'{b}'" for b in blockers) or "other models"
        why = (
            f"{self._waiting} loads already wait"
            if full
            else f"they stayed busy for {self.timeout_s:.0f} s"
        )
        log.warning("load of %s refused: %s hold the memory it needs and %s",
                    model_id, names, why)  # fmt: skip
        return ModelsBusyError(
            f"'{model_id}' can't be loaded now: {names} hold the memory it needs and are "
            f"answering requests ({why}). Retry shortly, or raise --max-models or "
            "--memory-budget.",
            retry_after_s=max(1, math.ceil(min(self.timeout_s, 10.0))),
        )
