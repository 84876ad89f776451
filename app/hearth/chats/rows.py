"""Rows of chats.db as the store's plain values (the columns each read selects)."""

from __future__ import annotations

import json
import sqlite3

from hearth.chats.models import Conversation, Message, MessageStatus, ReplyStats, SamplingSettings

CONV_COLS = (
    "id, title, created, updated, model, system_prompt, sampling, preset_id, tool_choice"
)
MSG_COLS = (
    "id, conversation_id, role, content, created, status, detail, prompt_tokens,"
    " completion_tokens, cached_tokens, tokens_per_s, ttft_ms, model, reasoning,"
    " reasoning_ms, variant_of, draft_tokens, accepted_tokens"
)


def conversation(row: sqlite3.Row) -> Conversation:
    return Conversation(
        id=row["id"],
        title=row["title"],
        created=row["created"],
        updated=row["updated"],
        model=row["model"],
        system_prompt=row["system_prompt"],
        sampling=SamplingSettings.from_json(row["sampling"]),
        preset_id=row["preset_id"],
        tool_choice=tool_choice(row["tool_choice"]),
    )


def tool_choice(text: str | None) -> tuple[tuple[str, str], ...]:
    """The stored [server, tool] pairs; anything else in the list is left out."""
    try:
        pairs = json.loads(text or "[]")
    except ValueError:
        return ()
    if not isinstance(pairs, list):
        return ()
    return tuple(
        (p[0], p[1])
        for p in pairs
        if isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
    )


def message(row: sqlite3.Row) -> Message:
    return Message(
        id=row["id"],
        conversation_id=row["conversation_id"],
        role=row["role"],
        content=row["content"],
        created=row["created"],
        status=MessageStatus(row["status"]),
        detail=row["detail"],
        stats=ReplyStats(
            prompt_tokens=row["prompt_tokens"],
            completion_tokens=row["completion_tokens"],
            cached_tokens=row["cached_tokens"],
            tokens_per_s=row["tokens_per_s"],
            ttft_ms=row["ttft_ms"],
            draft_tokens=row["draft_tokens"],
            accepted_tokens=row["accepted_tokens"],
        ),
        model=row["model"],
        reasoning=row["reasoning"],
        reasoning_ms=row["reasoning_ms"],
        variant_of=row["variant_of"],
    )
