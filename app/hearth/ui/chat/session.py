"""The current conversation and its streaming turn, between ChatView, the store and
the worker.

The whole conversation is sent each turn (the worker's prefix cache makes that
cheap). Every store call runs on the store's own thread (``AsyncChatStore``), queued
in order, so the Qt thread never waits on disk. A reply is recorded as it streams:
its row exists as 'streaming' before the first token, is checkpointed about every
0.5 s, and ends 'complete', 'interrupted' (Stop, or the worker died) or 'error'.

This module holds the conversation (its turns, settings, id) and starts each turn; the
pieces it drives live beside it: the turn's rows (``rows.py``), its stream (``reply.py``,
``tool_turn.py``), how it ends on screen (``turn_end.py``), the card actions and the
documents (``actions.py``, ``documents.py``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import time
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QObject, Signal

from hearth.chats import (
    AsyncChatStore,
    Conversation,
    MessageStatus,
    ReplyRecorder,
    SamplingSettings,
)
from hearth.chats.images import ImageData
from hearth.config.paths import default_paths
from hearth.config.secrets import get_secret
from hearth.supervisor import ChatStreamStats, Supervisor
from hearth.tools.chat_tools import ChatTools
from hearth.ui.chat.actions import CardActions
from hearth.ui.chat.documents import ChatDocuments
from hearth.ui.chat.model import ChatModel
from hearth.ui.chat.reply import read_reply
from hearth.ui.chat.rows import (
    ConversationRef,
    NewConversation,
    TurnState,
    forget_from,
    read_turns,
    save_outcome,
    setup_rows,
)
from hearth.ui.chat.tool_menu import ToolsMenu
from hearth.ui.chat.tool_turn import ToolTurn, chat_messages, choice_keeper, known_catalog
from hearth.ui.chat.turn_end import end_turn
from hearth.ui.chat.turns import (
    ChatSettings,
    Turn,
    draw_turns,
    request_args,
    stats_text,
)
from hearth.ui.chat.view import ChatView
from hearth.ui.tasks import TaskSet

log = logging.getLogger(__name__)


class ChatController(QObject):
    generation_finished = Signal(str)
    """Emitted with the outcome ("done", "stopped" or "error") once a turn is saved."""
    conversation_changed = Signal()
    """The current conversation changed (opened, created, saved for the first time)."""
    history_changed = Signal()
    """Something in the list of conversations changed (a new one, a new message)."""
    turn_starting = Signal()
    """A turn is about to read the settings: pending edits must be handed over now."""

    def __init__(
        self,
        view: ChatView,
        supervisor: Supervisor,
        tasks: TaskSet,
        settings: ChatSettings | None = None,
        *,
        db: AsyncChatStore | None = None,
        tools: ChatTools | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.view = view
        self.supervisor = supervisor
        self.settings = settings or ChatSettings()
        self.db = db
        self.turns: list[Turn] = []
        self.system_prompt = ""
        self.sampling = SamplingSettings()
        self.preset_id: int | None = None
        self.title = ""
        self.last_stats: ChatStreamStats | None = None
        self._ref = ConversationRef()
        self._tasks = tasks
        self._task: asyncio.Task[str | None] | None = None
        self.model = ChatModel(supervisor, self)  # the loaded model, or a remote one
        # MCP tools: the servers of mcp.json, this chat's choice, the Tools button.
        self.tools = tools or ChatTools(secrets=get_secret, log_dir=default_paths().logs_dir)
        self.tool_menu = ToolsMenu(
            self.tools, tasks, lambda: self._ref.id, self.model.known_context, view
        )
        self.tools.on_choice = choice_keeper(db)  # each saved chat keeps its tools
        view.send_requested.connect(self._on_send)
        view.stop_requested.connect(self.stop)
        view.regenerate_requested.connect(self.regenerate)
        view.edit_requested.connect(self.begin_edit)
        view.theme_changed.connect(self._restyle)
        self._editing: int | None = None
        self.card_actions = CardActions(self, tasks, parent=self)
        self.documents = ChatDocuments(self, db, tasks, parent=self)  # attach, sources

    # ------------------------------------------------------------------ facts
    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def task(self) -> asyncio.Task[str | None] | None:
        """The streaming task of the current turn (None before the first)."""
        return self._task

    @property
    def conversation_id(self) -> int | None:
        return self._ref.id

    @property
    def conversation_ref(self) -> ConversationRef:
        """The conversation's id holder (its id is set on the store's thread)."""
        return self._ref

    @property
    def conversation(self) -> list[dict[str, Any]]:
        """The turns as OpenAI chat messages (without the system prompt); a reply that
        called tools is its assistant and tool messages."""
        return chat_messages(self.turns, known_catalog(self.tools))

    def request_messages(self) -> list[dict[str, Any]]:
        system = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        return system + self.conversation

    def effective_sampling(self) -> SamplingSettings:
        return self.sampling.merged(self.settings.as_sampling())

    # ------------------------------------------------------------------ turns
    def _on_send(self, text: str) -> None:
        images = self.view.take_images()
        if self._editing is not None:
            index, self._editing = self._editing, None
            self.view.set_editing(None)
            self.edit_and_resend(index, text, images)
        else:
            self.send(text, images)

    def send(
        self, text: str, images: Sequence[ImageData] = ()
    ) -> asyncio.Task[str | None] | None:
        """Add a user turn (with ``images``) and stream the reply; the streaming task."""
        # Every image of the chat goes with each turn (the composer says why not).
        count = sum(len(t.images) for t in self.turns) + len(images)
        if (images and not self.view.composer.images_fit(count)) or not self._can_start():
            self.view.composer.images.put_back(list(images))
            return None
        user = Turn("user", text, images=list(images))
        self.turns.append(user)
        self.view.add_user_turn(text, len(self.turns) - 1, user.images)
        return self._start_turn(user)

    def regenerate(self, index: int | None = None) -> asyncio.Task[str | None] | None:
        """Write reply ``index`` (the last by default) again. The earlier versions are
        kept as its variants (< 1/2 >); what followed it is dropped."""
        if index is None:
            index = len(self.turns) - 1
        if not 0 <= index < len(self.turns) or self.turns[index].role != "assistant":
            return None
        if not self._can_start():
            return None
        old = self.turns[index]
        if index + 1 < len(self.turns):
            self._forget_from(self.turns[index + 1])
        del self.turns[index:]
        self.redraw()
        return self._start_turn(None, variant_of=old)

    def begin_edit(self, index: int) -> None:
        """Put user message ``index`` into the input (its images into the tray); the
        next send replaces it."""
        if self.busy or not 0 <= index < len(self.turns) or self.turns[index].role != "user":
            return
        self._editing = index
        self.view.set_editing(self.turns[index].content)
        self.view.composer.images.put_back(self.turns[index].images)

    def edit_and_resend(
        self, index: int, text: str, images: Sequence[ImageData] = ()
    ) -> asyncio.Task[str | None] | None:
        """Replace user message ``index`` with ``text``, drop what followed, and resend."""
        if not self._can_start() or not 0 <= index < len(self.turns):
            return None
        if self.turns[index].role != "user":
            return None
        self._forget_from(self.turns[index])
        del self.turns[index:]
        self.redraw()
        return self.send(text, images)

    def stop(self) -> None:
        if self._task is not None and not self._task.done():
            log.info("stopping generation")
            self._task.cancel()

    def _can_start(self) -> bool:
        if self.busy or not self.model.available:
            log.warning("turn ignored: %s", "busy" if self.busy else "no worker")
            return False
        self.turn_starting.emit()  # e.g. a Max tokens typed a moment ago is handed over
        return True

    def _forget_from(self, turn: Turn) -> None:
        """Delete ``turn`` and everything after it from the store (queued, in order)."""
        ref = self._ref
        if self.db is not None:
            self.db.submit(lambda s: forget_from(s, ref, turn))

    def _start_turn(
        self, user: Turn | None, variant_of: Turn | None = None
    ) -> asyncio.Task[str | None]:
        reply = Turn("assistant", "", status=MessageStatus.STREAMING)
        reply.model = self.model.model_id
        if variant_of is not None:
            reply.variant_index = reply.variant_count = variant_of.variant_count
            reply.variant_count += 1
        state = TurnState(user=user, reply=reply, ref=self._ref, variant_of=variant_of)
        messages = self.request_messages()
        self.turns.append(reply)
        if self.db is not None:
            new = NewConversation(
                self.model.model_id, self.system_prompt, self.sampling, self.preset_id
            )
            state.setup = self.db.submit(lambda s: setup_rows(s, state, new))
        self.view.set_editing(None)
        self.view.begin_assistant_turn(len(self.turns) - 1, reply.meta())
        self.view.set_generating(True)
        task = self._tasks.spawn(self._stream_reply(state, messages), name="chat-turn")
        # A done-callback, not a `finally`: it also runs if Stop comes before the task
        # ever started.
        task.add_done_callback(lambda t: self._finish_turn(t, state))
        self._task = task
        return task

    async def _stream_reply(self, state: TurnState, messages: list[dict[str, Any]]) -> str | None:
        """Stream into the view and the store; returns an error message or None."""
        client = await self.model.ensure_worker() if self.model.remote else self.supervisor.client
        if client is None:
            return "No model is loaded."
        recorder: ReplyRecorder | None = None
        if self.db is not None and state.setup is not None:
            await asyncio.shield(asyncio.wrap_future(state.setup))
            if state.reply.id is not None:
                recorder = ReplyRecorder(self.db, state.reply.id)
            if state.ref.id is not None:
                self.tools.saved(state.ref.id)  # the tools it was sent with are its own
        await self.model.context_size(client)  # the documents' share of the context
        messages, state.sources = await self.documents.for_turn(messages, client)
        state.started = time.monotonic()
        args = {
            "model": self.model.model_id,
            **request_args(self.effective_sampling(), self.settings),
        }
        remote = self.model.remote is not None
        offered = await self.tool_menu.offered_for(self.supervisor.model_path, remote)
        catalog = await self.tools.catalog() if offered else None
        if catalog:
            turn = ToolTurn(
                self.view, self.tools, state, recorder=recorder, db=self.db, dialog_parent=self.view
            )
            await turn.run(client, messages, catalog, args)
        else:
            await read_reply(
                self.view, state, client.stream_chat_events(messages, **args), recorder
            )
        await self.model.context_size(client)
        return None

    def _finish_turn(self, task: asyncio.Task[str | None], state: TurnState) -> None:
        """Show the ending (``turn_end.py``), then save it and say so, in that order."""
        end = end_turn(self.view, self.turns, state, task, self.model.known_context())
        self.last_stats = state.stats
        saved = None
        if self.db is not None and state.setup is not None:
            first = state.user if end.dropped and state.user is not None else state.reply
            saved = self.db.submit(lambda s: save_outcome(s, state, first, end.dropped))
        self._tasks.spawn(self._announce(end.outcome, saved), name="chat-saved")

    async def _announce(
        self, outcome: str, saved: concurrent.futures.Future[object] | None
    ) -> None:
        if saved is not None:
            with contextlib.suppress(Exception):
                await asyncio.wrap_future(saved)
            self.conversation_changed.emit()
            self.history_changed.emit()
        self.generation_finished.emit(outcome)

    # ------------------------------------------------------------------ conversations
    def new_chat(self) -> None:
        """Start an empty conversation (saved when its first message is sent)."""
        self.stop()
        self._ref = ConversationRef()
        self.turns = []
        self.title = ""
        self._editing = None
        self.view.set_editing(None)
        self.view.clear_transcript()
        self.view.set_can_regenerate(False)
        self.documents.clear()
        self.conversation_changed.emit()

    async def open_conversation(self, conversation_id: int) -> None:
        """Show a saved conversation (its settings become the current ones)."""
        if self.db is None:
            return
        self.stop()
        reopened = conversation_id != self._ref.id  # not a redraw (a variant switch)
        conv, turns = await self.db.run(lambda s: read_turns(s, conversation_id))
        models = [t.model for t in turns if t.role == "assistant" and t.model]
        notice = (
            await self.model.restore(models[-1] if models else conv.model) if reopened else None
        )
        self._ref = ConversationRef(conversation_id)
        self.tools.open_chat(conv.tool_choice)
        self.apply_conversation(conv)
        self.turns = turns
        if reopened:
            await self.documents.show_chat(conversation_id)
        self._editing = None
        self.view.set_editing(None)
        self.redraw()
        last = self.turns[-1] if self.turns else None
        self.view.set_can_regenerate(last is not None and last.role == "assistant")
        n_ctx = self.model.known_context()
        footer = stats_text(last.stats if last else None, n_ctx)
        self.view.set_stats("\n".join(t for t in (footer, notice) if t))
        self.conversation_changed.emit()

    def apply_conversation(self, conv: Conversation) -> None:
        self.title = conv.title
        self.system_prompt = conv.system_prompt
        self.sampling = conv.sampling
        self.preset_id = conv.preset_id

    def set_chat_settings(
        self, system_prompt: str, sampling: SamplingSettings, preset_id: int | None
    ) -> None:
        """The settings panel changed: use them from the next turn, and save them."""
        self.system_prompt, self.sampling, self.preset_id = system_prompt, sampling, preset_id
        ref = self._ref
        if self.db is not None:
            self.db.submit(
                lambda s: (
                    s.set_chat_settings(
                        ref.id, system_prompt=system_prompt, sampling=sampling, preset_id=preset_id
                    )
                    if ref.id is not None
                    else None
                )
            )

    def _restyle(self) -> None:
        """The theme changed: draw the conversation again in its colours.

        A reply still streaming keeps the colours it started with until it is redrawn
        (the next theme change, or reopening the chat): redrawing under a live writer
        would cut it.
        """
        self.tool_menu.set_tokens(self.view.tokens)
        if self.busy or not self.turns:
            return
        stats = self.view.stats_label.text()
        self.redraw()
        self.view.set_stats(stats)

    def redraw(self) -> None:
        """Draw the conversation again from the turns (after a change not streamed)."""
        draw_turns(self.view, self.turns)
