"""Which model the chat talks to: one of the worker's loaded models, or a remote
engine's (``engine/model``) chosen in the model picker.

The worker holds several models; the chat names its own in each request, so moving
between chats that use different loaded models reloads nothing. A chat's model is the
one loaded last from the Load dialog, or a chip's "Chat with this model", or, when a
chat is reopened, the model of its last reply if that model is still loaded
(``restore``). If the chat's model is ejected, it talks to another loaded one.

A remote model needs no local one, but it is still reached through Hearth's worker
(one request path, tok/s and TTFT measured at Hearth), so choosing one starts a
worker without a model when none runs. Loading a local model replaces that worker
and clears the remote choice. Reopening a chat held with a remote model chooses that
model again (``restore``), while its engine is still configured. Also keeps the chosen
model's context size for the footer, asked once per worker and model.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from PySide6.QtCore import QObject, Signal

from hearth.config.engines import EngineConfigError, EngineRegistry
from hearth.config.launch import NO_MODEL
from hearth.supervisor import (
    Supervisor,
    WorkerClient,
    WorkerError,
    WorkerState,
    WorkerStatus,
)
from hearth.ui.threads import in_thread

log = logging.getLogger(__name__)


def remote_engine_name(model: str | None) -> str | None:
    """The engine of a remote model id (``engine/model``), or None for a local model:
    a local model's id is its GGUF file's name (``model_id_for``), which holds no '/'."""
    if not model or "/" not in model:
        return None
    engine, rest = model.split("/", 1)
    return engine if engine and rest else None


def _log_failure(future: asyncio.Future[WorkerClient]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.warning("no worker for the remote model: %s", future.exception())


def _engine_configured(name: str) -> bool:
    """Whether engine ``name`` is registered (reads engines.json: call off the Qt
    thread). An unreadable engines file serves no engine, so it counts as gone."""
    try:
        return EngineRegistry().get(name) is not None
    except EngineConfigError as exc:
        log.warning("remote engines: %s", exc)
        return False


class ChatModel(QObject):
    """The chat's model choice; ``remote_changed`` carries the remote id or None."""

    remote_changed = Signal(object)
    local_changed = Signal(object)
    """The loaded model the chat talks to changed (its id, or None: none loaded)."""

    def __init__(self, supervisor: Supervisor, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.supervisor = supervisor
        self.remote: str | None = None
        self.local: str | None = None  # the loaded model this chat chose
        self.loaded: tuple[str, ...] = ()  # the worker's loaded models, least recent first
        self._n_ctx: tuple[WorkerClient, str | None, int | None] | None = None
        self._starting: asyncio.Task[str] | None = None
        self._warming: asyncio.Future[WorkerClient] | None = None

    @property
    def model_id(self) -> str | None:
        """The id the next turn asks for (None: the worker's loaded model, if any)."""
        return self.remote or self.local_id

    @property
    def local_id(self) -> str | None:
        """The loaded model the chat talks to: its own choice while that is loaded, else
        the model the worker was started with, else the most recently used one."""
        if not self.loaded:  # not read yet: the worker's own model (a fresh worker's)
            return self.supervisor.model_id or self.local
        if self.local in self.loaded:
            return self.local
        started = self.supervisor.model_id
        return started if started in self.loaded else self.loaded[-1]

    def use_local(self, model: str | None) -> None:
        """Talk to the loaded model ``model`` from the next turn (and leave a remote one)."""
        before = self.local_id
        self.local = model
        self.use_remote(None)
        if self.local_id != before:
            self.local_changed.emit(self.local_id)

    def set_loaded(self, ids: Sequence[str]) -> None:
        """The worker's loaded models now (an eject may move the chat to another)."""
        before = self.local_id
        self.loaded = tuple(ids)
        if self.local_id != before:
            self.local_changed.emit(self.local_id)

    @property
    def available(self) -> bool:
        """Whether a turn can start: a worker runs, or a remote model can start one."""
        return self.supervisor.client is not None or self.remote is not None

    def use_remote(self, model: str | None) -> None:
        """Chat with ``model`` (``engine/model``) from the next turn; None: the local one."""
        if model == self.remote:
            return
        log.info("chat model: %s", model or "the loaded model")
        self.remote = model
        self.remote_changed.emit(model)

    async def restore(self, model: str | None) -> str | None:
        """A reopened chat's model, as its last reply recorded it: a remote model whose
        engine is still configured becomes the chat's model again (nothing is loaded
        here: the next turn reaches it through the worker). If its engine is gone, the
        current model stays and the returned notice says why. A local model's chat
        talks to that model again while the worker holds it; otherwise it keeps the
        current model: loading a file is the Load dialog's choice, with its memory
        settings, not a side effect of opening a chat."""
        engine = remote_engine_name(model)
        if model is None:
            return None
        if engine is None:
            return self._restore_local(model)
        if await in_thread(_engine_configured, engine):
            self.use_remote(model)
            self._warm()
            return None
        current = self.remote or self.supervisor.model_id
        log.warning("reopened chat's model %s: engine %r is not configured", model, engine)
        # One short line under the footer's stats (the label does not wrap).
        keep = f"Still chatting with {current}." if current else "Choose a model to continue."
        return f"{model} is unavailable: engine '{engine}' is no longer configured. {keep}"

    def _restore_local(self, model: str) -> str | None:
        """A local model's chat talks to it again when it is loaded; otherwise the
        current model stays (loading one is the Load dialog's choice) and the notice
        says so."""
        if model in self.loaded or (not self.loaded and model == self.supervisor.model_id):
            self.use_local(model)
            return None
        current = self.remote or self.local_id
        if current is None or current == model:
            return None
        return f"{model} is not loaded; still chatting with {current}. Load it to go on with it."

    def _warm(self) -> None:
        """Start the worker (without a local model) if none runs, as the picker does
        when it lists remote models: the chat can send once it is ready."""
        if self.supervisor.process is not None:
            return
        self._warming = asyncio.ensure_future(self.ensure_worker())
        self._warming.add_done_callback(_log_failure)

    def on_status(self, status: WorkerStatus | None) -> None:
        """A local model starting to load becomes the chat's model (our own start for a
        remote model has no model name)."""
        if self.remote is None or status is None or not status.model:
            return
        if status.state in (WorkerState.STARTING, WorkerState.LOADING):
            self.use_remote(None)

    async def ensure_worker(self) -> WorkerClient:
        """The worker's client; starts a worker without a local model if none runs
        (remote engines are served, and tested, by the worker)."""
        if self._starting is None or self._starting.done():
            client = self.supervisor.client
            if self.supervisor.process is not None:  # running, or a load in progress
                if client is None:
                    raise WorkerError("A model is loading; try again when it is ready.")
                return client
            log.info("starting a worker without a local model, for remote engines")
            self._starting = asyncio.ensure_future(self.supervisor.start(NO_MODEL))
        await asyncio.shield(self._starting)
        client = self.supervisor.client
        if client is None:
            raise WorkerError("Hearth's worker stopped before it was ready.")
        return client

    async def context_size(self, client: WorkerClient) -> int | None:
        """The chosen model's context length (a remote one's as its engine states it)."""
        model = self.model_id
        cached = self._n_ctx
        if cached is not None and cached[0] is client and cached[1] == model:
            return cached[2]
        try:
            metas = await client.model_meta()
        except WorkerError as exc:
            log.info("no model metadata: %s", exc)
            return None
        n_ctx = next((m.n_ctx for m in metas if m.id == model), None)
        if n_ctx is None and self.remote is None:  # an older worker: its one model
            n_ctx = metas[0].n_ctx if metas and not metas[0].remote else None
        self._n_ctx = (client, model, n_ctx)
        return n_ctx

    def known_context(self) -> int | None:
        """The last context size read (for the footer, without asking again)."""
        return self._n_ctx[2] if self._n_ctx is not None else None
