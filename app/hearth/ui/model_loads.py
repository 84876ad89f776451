"""Loading a model into a fresh worker, one load at a time.

A new load (Open, the Load dialog, Restart, the automatic restart after a crash)
cancels the one in progress and waits for it to end before starting, so two workers
never start together; the chat's reply in progress is stopped first. A load that fails
only logs here: the window's banner shows the supervisor's status.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from hearth.supervisor import LoadOptions, ModelLoadError, Supervisor, SupervisorError
from hearth.ui.chat_session import ChatController
from hearth.ui.tasks import TaskSet

log = logging.getLogger(__name__)


class ModelLoads:
    """The window's current load task and how a new one replaces it."""

    def __init__(self, supervisor: Supervisor, chat: ChatController, tasks: TaskSet) -> None:
        self.supervisor, self.chat, self._tasks = supervisor, chat, tasks
        self.task: asyncio.Task[None] | None = None

    @property
    def loading(self) -> bool:
        """Whether a load (or the wait for a previous one) is in progress."""
        return self.task is not None and not self.task.done()

    def start(self, path: Path, options: LoadOptions | None) -> asyncio.Task[None]:
        """Load ``path`` with ``options``, after the load in progress (cancelled) ends."""
        previous = self.task
        if previous is not None:
            previous.cancel()
        self.chat.stop()
        self.task = self._tasks.spawn(self._load(path, previous, options), name="load-model")
        return self.task

    def cancel(self) -> bool:
        """Stop a load in progress (the worker being started is stopped); False if none."""
        if self.task is None or self.task.done():
            return False
        self.task.cancel()
        return True

    async def _load(
        self, path: Path, previous: asyncio.Task[None] | None, options: LoadOptions | None
    ) -> None:
        if previous is not None and not previous.done():
            await asyncio.wait([previous])
        try:
            await self.supervisor.start(path, options)
        except (SupervisorError, ModelLoadError) as exc:
            log.warning("could not load %s: %s", path, exc)  # the banner shows it
