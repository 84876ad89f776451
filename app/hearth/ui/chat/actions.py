"""What a message card's actions do: copy, delete, switch variants, fold reasoning
and sources.

Edit and Regenerate are turns, so ``ChatController`` runs them; this handles the rest
against the controller's public API, and the store on its own thread.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from PySide6.QtCore import QObject, SignalInstance
from PySide6.QtGui import QGuiApplication

from hearth.chats import AsyncChatStore
from hearth.ui.chat.turns import Turn
from hearth.ui.chat.view import ChatView
from hearth.ui.tasks import TaskSet

log = logging.getLogger(__name__)


class CardChat(Protocol):
    """What the card actions use of the chat (``ChatController`` is one): its public API
    only, so the controller and its actions stay out of an import circle."""

    @property
    def view(self) -> ChatView: ...
    @property
    def turns(self) -> list[Turn]: ...
    @property
    def db(self) -> AsyncChatStore | None: ...
    @property
    def busy(self) -> bool: ...
    @property
    def conversation_id(self) -> int | None: ...
    @property
    def history_changed(self) -> SignalInstance: ...
    def regenerate(self, index: int | None = None) -> object: ...
    def redraw(self) -> None: ...
    async def open_conversation(self, conversation_id: int) -> None: ...


class CardActions(QObject):
    def __init__(self, chat: CardChat, tasks: TaskSet, parent: QObject) -> None:
        super().__init__(parent)
        self.chat = chat
        self._tasks = tasks
        chat.view.message_action.connect(self.on_action)
        chat.view.transcript.tool_toggled.connect(self.on_tool)

    def on_action(self, kind: str, index: int) -> asyncio.Task[None] | None:
        chat = self.chat
        if not 0 <= index < len(chat.turns):
            return None
        turn = chat.turns[index]
        if kind == "copy":
            QGuiApplication.clipboard().setText(turn.content)
        elif kind == "regenerate":
            chat.regenerate(index)
        elif kind == "think":
            turn.reasoning_open = not turn.reasoning_open
            chat.redraw()
        elif kind == "sources":
            turn.sources_open = not turn.sources_open
            chat.redraw()
        elif kind == "delete" and not chat.busy:
            return self._tasks.spawn(self.delete(index), name="delete-message")
        elif kind in ("prev", "next") and not chat.busy:
            step = -1 if kind == "prev" else 1
            return self._tasks.spawn(self.switch_variant(index, step), name="switch-variant")
        return None

    def on_tool(self, index: int, call: int) -> None:
        """A folded tool call was clicked: open it, or fold it again (the reply still
        streaming is drawn as it comes; it can be opened once it ended)."""
        chat = self.chat
        if chat.busy or not 0 <= index < len(chat.turns):
            return
        opened = chat.turns[index].tools_open
        opened.symmetric_difference_update({call})
        chat.redraw()

    async def delete(self, index: int) -> None:
        """Delete message ``index`` (a reply with all its variants)."""
        chat = self.chat
        turn = chat.turns.pop(index)
        if chat.db is not None and turn.id is not None:
            mid = turn.id
            await chat.db.run(lambda s: s.delete_message(mid))
        chat.redraw()
        chat.history_changed.emit()

    async def switch_variant(self, index: int, step: int) -> None:
        """Show the previous (-1) or next (+1) regeneration of reply ``index``."""
        chat, turn = self.chat, self.chat.turns[index]
        cid = chat.conversation_id
        if chat.db is None or turn.id is None or cid is None:
            return
        mid = turn.id
        variants = await chat.db.run(lambda s: s.variants(mid))
        ids = [m.id for m in variants]
        if mid not in ids or not 0 <= ids.index(mid) + step < len(ids):
            return
        target = ids[ids.index(mid) + step]
        await chat.db.run(lambda s: s.show_variant(target))
        await chat.open_conversation(cid)
