"""A conversation as Markdown (to read) and as JSON (to keep or re-import)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from hearth.chats.models import Conversation, Message, MessageStatus

ROLE_TITLES = {"user": "You", "assistant": "Assistant", "system": "System"}
JSON_FORMAT = "hearth.conversation"
JSON_VERSION = 1


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds")


def conversation_markdown(conv: Conversation, messages: list[Message]) -> str:
    lines = [f"# {conv.title}", ""]
    facts = [f"- Created: {_iso(conv.created)}"]
    if conv.model:
        facts.append(f"- Model: {conv.model}")
    sampling = conv.sampling.to_dict()
    if sampling:
        facts.append("- Sampling: " + ", ".join(f"{k}={v}" for k, v in sampling.items()))
    lines += [*facts, ""]
    if conv.system_prompt:
        lines += ["## System prompt", "", conv.system_prompt, ""]
    for msg in messages:
        lines += [f"## {ROLE_TITLES.get(msg.role, msg.role)}", "", msg.content.rstrip(), ""]
        if msg.status is not MessageStatus.COMPLETE:
            note = msg.detail or msg.status.value
            lines += [f"*({msg.status.value}: {note})*", ""]
    return "\n".join(lines).rstrip() + "\n"


def _message_json(msg: Message) -> dict[str, Any]:
    stats = {k: v for k, v in vars(msg.stats).items() if v is not None}
    out: dict[str, Any] = {
        "role": msg.role,
        "content": msg.content,
        "created": _iso(msg.created),
        "status": msg.status.value,
    }
    if msg.detail:
        out["detail"] = msg.detail
    if stats:
        out["stats"] = stats
    return out


def conversation_json(conv: Conversation, messages: list[Message]) -> str:
    data = {
        "format": JSON_FORMAT,
        "version": JSON_VERSION,
        "title": conv.title,
        "created": _iso(conv.created),
        "updated": _iso(conv.updated),
        "model": conv.model,
        "system_prompt": conv.system_prompt,
        "sampling": conv.sampling.to_dict(),
        "messages": [_message_json(m) for m in messages],
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
