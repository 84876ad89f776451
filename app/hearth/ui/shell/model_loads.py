"""Loading a model, one load at a time: into a fresh worker, or into the running one
beside the models it holds (or instead of them).

A new load (Open, the Load dialog, Restart, the automatic restart after a crash)
cancels the one in progress and waits for it to end before starting, so two workers
never start together; a fresh worker, or a load that replaces the loaded models, stops
the chat's reply in progress first. A fresh worker's failure only logs here: the
window's banner shows the supervisor's status. A load into the running worker
(``start_beside``) reports its progress, its model and its failure to the callbacks.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Protocol

from hearth.core.residency import LoadedModel
from hearth.supervisor import (
    LoadOptions,
    ModelLoadError,
    Supervisor,
    SupervisorError,
    WorkerError,
)
from hearth.ui.chat.session import ChatController
from hearth.ui.tasks import TaskSet

log = logging.getLogger(__name__)


class BesideListener(Protocol):
    """Who shows a load into the running worker: its progress, its end, its model."""

    def load_progress(self, name: str | None, progress: float | None) -> None: ...
    def load_done(self, loaded: LoadedModel) -> None: ...
    def load_failed(self, name: str, message: str) -> None: ...


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

    def restart(self) -> asyncio.Task[None]:
        """Bring the worker back after a crash with every model it held
        (``Supervisor.restart``), after the load in progress (cancelled) ends."""
        previous = self.task
        if previous is not None:
            previous.cancel()
        self.chat.stop()
        self.task = self._tasks.spawn(self._restart(previous), name="restart-worker")
        return self.task

    async def _restart(self, previous: asyncio.Task[None] | None) -> None:
        if previous is not None and not previous.done():
            await asyncio.wait([previous])
        try:
            await self.supervisor.restart()
        except (SupervisorError, ModelLoadError, WorkerError) as exc:
            log.warning("could not restart after the crash: %s", exc)  # the banner says

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

    def start_beside(
        self,
        path: Path,
        options: LoadOptions,
        *,
        replace: bool,
        listener: BesideListener,
    ) -> asyncio.Task[None]:
        """Load ``path`` into the running worker, alongside its models (or, with
        ``replace``, instead of them), after the load in progress (cancelled) ends."""
        previous = self.task
        if previous is not None:
            previous.cancel()
        if replace:
            self.chat.stop()  # its model is about to go
        coro = self._beside(path, previous, options, replace, listener)
        self.task = self._tasks.spawn(coro, name="load-beside")
        return self.task

    async def _beside(
        self,
        path: Path,
        previous: asyncio.Task[None] | None,
        options: LoadOptions,
        replace: bool,
        listener: BesideListener,
    ) -> None:
        if previous is not None and not previous.done():
            await asyncio.wait([previous])
        if self.supervisor.client is None:  # the worker went away meanwhile: start one
            await self._load(path, None, options)
            return
        name = path.name.removesuffix(".gguf")
        listener.load_progress(name, None)
        try:
            loaded = await self.supervisor.load_beside(
                path,
                options,
                replace=replace,
                on_progress=lambda p: listener.load_progress(name, p),
            )
        except (ModelLoadError, WorkerError) as exc:
            log.warning("could not load %s beside the others: %s", path, exc)
            listener.load_failed(name, str(getattr(exc, "message", exc)))
        else:
            listener.load_done(loaded)
        finally:
            listener.load_progress(None, None)
