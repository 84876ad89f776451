"""The model lifecycle's states, and how a change reaches everyone waiting for one.

The model manager is the only writer. Readers (``/health``, ``/hearth/v1/events``,
requests waiting for a load) never poll: they wait on :meth:`StateBroadcast.changed`
or read the queue :meth:`StateBroadcast.subscribe` gives them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum


class LifecycleState(str, Enum):
    EMPTY = "idle"  # wire name kept: clients (and the GUI) read "idle"
    LOADING = "loading"
    READY = "ready"
    UNLOADING = "unloading"
    ERROR = "error"


SETTLED = (LifecycleState.EMPTY, LifecycleState.READY, LifecycleState.ERROR)


@dataclass(frozen=True)
class ModelState:
    """One moment of the lifecycle. ``load_id`` counts loads that finished, so a client
    can tell "the same model, still loaded" from "reloaded"."""

    state: LifecycleState = LifecycleState.EMPTY
    progress: float = 0.0
    model_id: str | None = None
    error: str | None = None
    load_id: int = 0

    @property
    def settled(self) -> bool:
        return self.state in SETTLED


_SUBSCRIBER_BACKLOG = 256


class StateBroadcast:
    """Holds the current :class:`ModelState` and pushes each change to subscribers.

    All methods run on the event loop; a thread reports through ``loop.call_soon_threadsafe``.
    """

    def __init__(self) -> None:
        self._state = ModelState()
        self._changed = asyncio.Event()
        self._subscribers: set[asyncio.Queue[ModelState]] = set()

    @property
    def state(self) -> ModelState:
        return self._state

    def publish(self, state: ModelState) -> None:
        if state == self._state:
            return
        self._state = state
        self._changed.set()
        self._changed = asyncio.Event()
        for queue in self._subscribers:
            if queue.full():  # a stalled reader loses old progress, never the latest state
                with contextlib.suppress(asyncio.QueueEmpty):
                    queue.get_nowait()
            queue.put_nowait(state)

    async def changed(self) -> ModelState:
        """Wait for the next change and return the state it made."""
        await self._changed.wait()
        return self._state

    @contextlib.contextmanager
    def subscribe(self) -> Iterator[asyncio.Queue[ModelState]]:
        """A queue that receives every later state; the current one is already in it."""
        queue: asyncio.Queue[ModelState] = asyncio.Queue(maxsize=_SUBSCRIBER_BACKLOG)
        queue.put_nowait(self._state)
        self._subscribers.add(queue)
        try:
            yield queue
        finally:
            self._subscribers.discard(queue)
