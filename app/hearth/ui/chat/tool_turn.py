"""A chat turn with tools: the tool loop (``tools/chat_loop.py``) run through the chat.

Each model step streams into the same reply card as a plain turn does (``read_reply``),
offered the chat's chosen tools; each call is asked about in the approval dialog, shown
folded where it came in the reply once it ended, and kept with the reply in the store
(queued after the reply's row exists). Split from ``session.py``, which starts and
ends the turns.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QWidget

from hearth.chats import AsyncChatStore, ReplyRecorder, ToolCallRecord
from hearth.supervisor import WorkerClient
from hearth.tools.chat_loop import Approval, StepReply, ToolCatalog, ToolLoop, ToolRequest, replay
from hearth.tools.chat_tools import ChatTools
from hearth.ui.chat.reply import read_reply, show_answer
from hearth.ui.chat.rows import TurnState
from hearth.ui.chat.tool_approval import ask_approval
from hearth.ui.chat.turns import Turn
from hearth.ui.chat.view import ChatView

log = logging.getLogger(__name__)


def chat_messages(turns: list[Turn], catalog: ToolCatalog) -> list[dict[str, Any]]:
    """The turns as OpenAI chat messages; a reply that called tools is sent as the
    assistant and tool messages the model saw then."""
    out: list[dict[str, Any]] = []
    for turn in turns:
        if turn.role == "assistant" and turn.tool_calls:
            out.extend(replay(turn.content, turn.tool_calls, catalog))
        else:
            out.append(turn.request_message())  # with its images, if any
    return out


def choice_keeper(db: AsyncChatStore | None) -> Callable[[int, frozenset[tuple[str, str]]], None]:
    """Saves a chat's choice of tools with it (queued on the store's thread)."""

    def keep(chat: int, choice: frozenset[tuple[str, str]]) -> None:
        if db is not None:
            db.submit(lambda s: s.tool_calls.set_choice(chat, choice))

    return keep


def known_catalog(tools: ChatTools | None) -> ToolCatalog:
    """Every tool listed so far: the names earlier calls are sent under."""
    if tools is None:
        return ToolCatalog([])
    return ToolCatalog([t for listed in tools.known.values() for t in listed])


class ToolTurn:
    def __init__(
        self,
        view: ChatView,
        tools: ChatTools,
        state: TurnState,
        *,
        recorder: ReplyRecorder | None,
        db: AsyncChatStore | None,
        dialog_parent: QWidget,
    ) -> None:
        self.view, self.tools, self.state = view, tools, state
        self._recorder, self._db, self._parent = recorder, db, dialog_parent
        self._client: WorkerClient | None = None
        self._args: dict[str, Any] = {}

    async def run(
        self,
        client: WorkerClient,
        messages: list[dict[str, Any]],
        catalog: ToolCatalog,
        args: dict[str, Any],
    ) -> None:
        """Run the turn; the step limit and servers that would not start are noted."""
        self._client, self._args = client, args
        for server, error in self.tools.errors.items():
            if any(s == server for s, _tool in self.tools.choice):
                self.state.notes.append(error)
        loop = ToolLoop(
            self.tools.host,
            self.tools.permissions,
            self._ask,
            step_limit=self.tools.step_limit,
            call_timeout=self.tools.call_timeout,
            keep=self._keep,
            status=self.view.set_stats,
        )
        outcome = await loop.run(messages, self._step, catalog)
        if outcome.limited:
            self.state.notes.append(
                f"stopped after {self.tools.step_limit} rounds of tool calls: the model "
                "answered without tools"
            )

    async def _step(
        self, messages: list[dict[str, Any]], specs: list[dict[str, Any]] | None
    ) -> StepReply:
        state, client = self.state, self._client
        assert client is not None
        before = len(state.parts)
        state.stats = None
        extra: dict[str, Any] = {"tools": specs} if specs else {}
        stream = client.stream_chat_events(messages, **self._args, **extra)
        await read_reply(self.view, state, stream, self._recorder)
        tail = state.think.finish()  # text held back at the step's end is its own
        if tail:
            show_answer(self.view, state, tail, self._recorder)
        calls = state.stats.tool_calls if state.stats is not None else ()
        return StepReply("".join(state.parts[before:]), calls)

    async def _ask(self, request: ToolRequest) -> Approval:
        return await ask_approval(self._parent, request)

    def _keep(self, record: ToolCallRecord) -> None:
        reply = self.state.reply
        reply.tool_calls.append(record)
        self.view.show_tool_calls([(len(reply.tool_calls) - 1, record)])
        if self._db is not None:
            self._db.submit(
                lambda s: s.tool_calls.add(reply.id, record) if reply.id is not None else None
            )
