"""Conversation history: a SQLite store (WAL, FTS5 search), presets and export.

Plain Python: no Qt and no llama_cpp. The GUI reaches the store through
``AsyncChatStore``, which runs every call on one dedicated thread.
"""

from hearth.chats.async_store import AsyncChatStore, ReplyRecorder
from hearth.chats.export import conversation_json, conversation_markdown
from hearth.chats.models import (
    ApprovedBy,
    Conversation,
    Message,
    MessageStatus,
    Preset,
    ReplyStats,
    SamplingSettings,
    SearchHit,
    ToolCallRecord,
    ToolOutcome,
)
from hearth.chats.presets import BUILTIN_PRESETS
from hearth.chats.store import ChatStore, ChatStoreError

__all__ = [
    "BUILTIN_PRESETS",
    "ApprovedBy",
    "AsyncChatStore",
    "ChatStore",
    "ChatStoreError",
    "Conversation",
    "Message",
    "MessageStatus",
    "Preset",
    "ReplyRecorder",
    "ReplyStats",
    "SamplingSettings",
    "SearchHit",
    "ToolCallRecord",
    "ToolOutcome",
    "conversation_json",
    "conversation_markdown",
]
