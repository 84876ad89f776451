"""One queued request's events, as the HTTP layer reads them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from hearth.core.generation import Finished, GenerationEvent
from hearth.engine.scheduler import Scheduler
from hearth.engine.slots import Job


class GenerationStream:
    """The events of one queued request; ``cancel`` frees its slot within one step."""

    def __init__(self, scheduler: Scheduler, job: Job, queue: asyncio.Queue[GenerationEvent]):
        self._scheduler = scheduler
        self._job = job
        self._queue = queue
        self.finished: Finished | None = None
        self.prompt_tokens = len(job.tokens)

    def __aiter__(self) -> AsyncIterator[GenerationEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[GenerationEvent]:
        while self.finished is None:
            event = await self._queue.get()
            if isinstance(event, Finished):
                self.finished = event
            yield event

    def cancel(self) -> None:
        if self.finished is None:
            self._scheduler.cancel(self._job)
