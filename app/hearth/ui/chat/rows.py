"""A chat turn's rows in the store, written on the store's own thread.

``ChatController`` queues these on ``AsyncChatStore`` in order: the setup (the
conversation if new, the user's row, the reply's 'streaming' row, a new variant when
regenerating) before the first token, the outcome once the stream ended (how it
ended is ``turn_end.py``'s).
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from dataclasses import dataclass, field

from hearth.chats import ChatStore, Conversation, MessageStatus, SamplingSettings
from hearth.chats.attachments import PassageHit
from hearth.supervisor import ChatStreamStats
from hearth.ui.chat.reasoning import ThinkSplitter
from hearth.ui.chat.turns import Turn, title_for

log = logging.getLogger(__name__)


@dataclass
class ConversationRef:
    """The conversation's id, read and set on the store's thread (None: not saved yet)."""

    id: int | None = None


@dataclass(frozen=True)
class NewConversation:
    """What a conversation is created with when its first turn is saved."""

    model: str | None
    system_prompt: str
    sampling: SamplingSettings
    preset_id: int | None


@dataclass
class TurnState:
    user: Turn | None
    reply: Turn
    ref: ConversationRef
    variant_of: Turn | None = None  # the reply this one regenerates
    parts: list[str] = field(default_factory=list)  # the answer's deltas
    deltas: int = 0  # every delta, reasoning included (one token each)
    think: ThinkSplitter = field(default_factory=ThinkSplitter)
    reasoning_shown: bool = False
    started: float = field(default_factory=time.monotonic)
    first_delta: float | None = None
    stats: ChatStreamStats | None = None
    setup: concurrent.futures.Future[object] | None = None
    sources: tuple[PassageHit, ...] = ()  # the documents' passages sent with the question
    notes: list[str] = field(default_factory=list)  # said after the reply (tools)


def setup_rows(store: ChatStore, state: TurnState, new: NewConversation) -> None:
    """The conversation (if new), the user row, the reply row (a variant when
    regenerating: the earlier replies are kept, hidden)."""
    if state.ref.id is None:
        first = state.user.content if state.user else "New chat"
        conv: Conversation = store.create_conversation(
            title_for(first),
            model=new.model,
            system_prompt=new.system_prompt,
            sampling=new.sampling,
            preset_id=new.preset_id,
        )
        state.ref.id = conv.id
    if state.user is not None:
        state.user.id = store.add_message(state.ref.id, "user", state.user.content).id
        store.images.add(state.user.id, state.user.images)  # files, then their rows
    old = state.variant_of.id if state.variant_of is not None else None
    state.reply.id = store.add_message(
        state.ref.id,
        "assistant",
        "",
        MessageStatus.STREAMING,
        model=state.reply.model,
        variant_of=old,
    ).id


def read_turns(store: ChatStore, conversation_id: int) -> tuple[Conversation, list[Turn]]:
    """A saved conversation as shown: its turns (no system rows), each with its images
    (their bytes read) and the sources it was given."""
    messages = store.messages(conversation_id)
    shown = store.images.of_messages(m.id for m in messages)
    sources = store.attachments.sources(conversation_id)
    turns = [Turn.from_message(m) for m in messages if m.role != "system"]
    for turn in turns:
        turn.sources = tuple(sources.get(turn.id or 0, ()))
        turn.images = store.images.load(shown[turn.id]) if turn.id in shown else []
    return store.conversation(conversation_id), turns


def save_outcome(store: ChatStore, state: TurnState, first: Turn, dropped: bool) -> None:
    """After the setup job: finalize the rows, or drop them (nothing came back; a
    regenerated reply's earlier variant is shown again)."""
    reply = state.reply
    if state.ref.id is None or reply.id is None:
        return
    if dropped and first.id is not None:
        store.delete_messages_from(state.ref.id, first.id)
        if state.variant_of is not None and state.variant_of.id is not None:
            store.show_variant(state.variant_of.id)
        return
    store.finish_message(
        reply.id,
        reply.content,
        reply.status,
        detail=reply.detail,
        stats=reply.stats,
        reasoning=reply.reasoning,
        reasoning_ms=reply.reasoning_ms,
    )
    if state.sources:
        store.attachments.add_sources(reply.id, state.sources)


def forget_from(store: ChatStore, ref: ConversationRef, turn: Turn) -> int:
    """Delete ``turn``'s row and every later one (read on the store's thread: the ids
    may have been set just before, by the setup job queued ahead)."""
    if ref.id is None or turn.id is None:
        return 0
    return store.delete_messages_from(ref.id, turn.id)
