"""The chat store off the GUI thread, and crash-safe recording of a streaming reply.

``AsyncChatStore`` owns one thread that owns the SQLite connection: every call is
queued to it, so calls run in order and the caller's thread (the Qt thread) never
waits on disk. ``ReplyRecorder`` checkpoints a reply while it streams.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from hearth.chats.models import MessageStatus, ReplyStats
from hearth.chats.store import ChatStore

log = logging.getLogger(__name__)

T = TypeVar("T")

CHECKPOINT_INTERVAL_S = 0.5


class AsyncChatStore:
    """Runs ``ChatStore`` calls on a dedicated thread.

    The store is opened (migrations, recovery of interrupted replies) by the first job
    on that thread, so creating this object never blocks.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="hearth-chats-db"
        )
        self._opened = self._executor.submit(ChatStore, path)
        self._closed = False

    def _call(self, fn: Callable[[ChatStore], T]) -> T:
        return fn(self._opened.result())

    async def run(self, fn: Callable[[ChatStore], T]) -> T:
        """``await db.run(lambda s: s.messages(cid))``: run on the store's thread."""
        if self._closed:
            raise RuntimeError("the chat store is closed")
        return await asyncio.wrap_future(self._executor.submit(self._call, fn))

    def submit(self, fn: Callable[[ChatStore], object]) -> concurrent.futures.Future[object]:
        """Queue a write without waiting for it (still in order with every other call)."""
        future = self._executor.submit(self._call, fn)
        future.add_done_callback(_log_failure)
        return future

    def sync(self, fn: Callable[[ChatStore], T]) -> T:
        """Blocking call, for shutdown paths and tests without a running loop."""
        return self._executor.submit(self._call, fn).result()

    def close(self) -> None:
        """Finish queued writes, then close the connection (blocks until done)."""
        if self._closed:
            return
        self._closed = True

        def _close() -> None:
            if self._opened.exception() is None:
                self._opened.result().close()

        self._executor.submit(_close)
        self._executor.shutdown(wait=True)


def _log_failure(future: concurrent.futures.Future[object]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.error("chat store write failed", exc_info=future.exception())


class ReplyRecorder:
    """Keeps a streaming reply's row up to date so a crash loses at most ~0.5 s of it.

    The row was created as 'streaming' before the first token. ``append`` is cheap (it
    only queues a write every ``interval`` seconds); ``finish`` sets the final text,
    status and stats.
    """

    def __init__(
        self,
        db: AsyncChatStore,
        message_id: int,
        *,
        interval: float = CHECKPOINT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.db = db
        self.message_id = message_id
        self.interval = interval
        self._clock = clock
        self._parts: list[str] = []
        self._last = clock()
        self.checkpoints = 0

    @property
    def text(self) -> str:
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def append(self, delta: str) -> None:
        self._parts.append(delta)
        if self._clock() - self._last >= self.interval:
            self.checkpoint()

    def checkpoint(self) -> None:
        content, mid = self.text, self.message_id
        self._last = self._clock()
        self.checkpoints += 1
        self.db.submit(lambda s: s.save_partial(mid, content))

    async def finish(
        self,
        status: MessageStatus,
        *,
        detail: str | None = None,
        stats: ReplyStats | None = None,
    ) -> None:
        content, mid = self.text, self.message_id
        await self.db.run(
            lambda s: s.finish_message(mid, content, status, detail=detail, stats=stats)
        )

    def finish_soon(
        self, status: MessageStatus, *, detail: str | None = None, stats: ReplyStats | None = None
    ) -> None:
        """Like ``finish`` but without waiting (for callbacks that cannot await)."""
        content, mid = self.text, self.message_id
        self.db.submit(lambda s: s.finish_message(mid, content, status, detail=detail, stats=stats))
