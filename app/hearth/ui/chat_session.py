"""Conversation state and the streaming turn, between ChatView and the worker.

The whole conversation is sent each turn (the worker's prefix cache makes that
cheap). Stop cancels the streaming task, which closes the HTTP stream; the worker
frees its slot and the partial reply stays in the transcript and the conversation.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal

from hearth.supervisor import Supervisor, WorkerError
from hearth.ui.chat_view import ChatView
from hearth.ui.tasks import TaskSet

log = logging.getLogger(__name__)


@dataclass
class ChatSettings:
    temperature: float | None = None
    max_tokens: int | None = None


class ChatController(QObject):
    generation_finished = Signal(str)
    """Emitted with the outcome ("done", "stopped" or "error") after each turn."""

    def __init__(
        self,
        view: ChatView,
        supervisor: Supervisor,
        tasks: TaskSet,
        settings: ChatSettings | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.view = view
        self.supervisor = supervisor
        self.settings = settings or ChatSettings()
        self.conversation: list[dict[str, str]] = []
        self._tasks = tasks
        self._task: asyncio.Task[str | None] | None = None
        view.send_requested.connect(self.send)
        view.stop_requested.connect(self.stop)

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def task(self) -> asyncio.Task[str | None] | None:
        """The streaming task of the current turn (None before the first)."""
        return self._task

    def send(self, text: str) -> asyncio.Task[str | None] | None:
        """Add a user turn and stream the reply. Returns the streaming task."""
        if self.busy or self.supervisor.client is None:
            log.warning("send ignored: %s", "busy" if self.busy else "no worker")
            return None
        self.conversation.append({"role": "user", "content": text})
        self.view.add_user_turn(text)
        self.view.begin_assistant_turn()
        self.view.set_generating(True)
        parts: list[str] = []
        task = self._tasks.spawn(self._stream_reply(parts), name="chat-turn")
        # A done-callback, not a `finally`: it also runs if Stop comes before the task
        # ever started.
        task.add_done_callback(lambda t: self._finish_turn(t, parts))
        self._task = task
        return task

    def stop(self) -> None:
        if self._task is not None and not self._task.done():
            log.info("stopping generation")
            self._task.cancel()

    def new_chat(self) -> None:
        self.stop()
        self.conversation.clear()
        self.view.clear_transcript()

    async def _stream_reply(self, parts: list[str]) -> str | None:
        """Stream into ``parts`` and the view; returns an error message or None."""
        client = self.supervisor.client
        if client is None:
            return "No model is loaded."
        stream = client.stream_chat(
            list(self.conversation),
            model=self.supervisor.model_id,
            temperature=self.settings.temperature,
            max_tokens=self.settings.max_tokens,
        )
        try:
            async with contextlib.aclosing(stream):  # type: ignore[type-var]
                async for delta in stream:
                    parts.append(delta)
                    self.view.append_delta(delta)
        except WorkerError as exc:
            log.warning("chat turn failed: %s", exc)
            return exc.message
        return None

    def _finish_turn(self, task: asyncio.Task[str | None], parts: list[str]) -> None:
        if task.cancelled():
            outcome, note = "stopped", "stopped"
        elif task.exception() is not None:
            outcome, note = "error", f"Error: {task.exception()}"
        elif task.result() is not None:
            outcome, note = "error", f"Error: {task.result()}"
        else:
            outcome, note = "done", None
        reply = "".join(parts)
        if reply:
            self.conversation.append({"role": "assistant", "content": reply})
        elif outcome != "done" and self.conversation and self.conversation[-1]["role"] == "user":
            # Nothing came back: drop the question so roles keep alternating, and give
            # the text back to the input for another try.
            question = self.conversation.pop()["content"]
            if not self.view.input.toPlainText():
                self.view.input.setPlainText(question)
        self.view.end_assistant_turn(note, error=outcome == "error")
        self.view.set_generating(False)
        self.generation_finished.emit(outcome)
