"""Plain values the chat store reads and writes."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from enum import Enum
from typing import Any


class MessageStatus(str, Enum):
    COMPLETE = "complete"
    STREAMING = "streaming"  # being written; becomes INTERRUPTED if the app dies
    INTERRUPTED = "interrupted"  # cut short (stop, worker crash, app crash); text kept
    ERROR = "error"


@dataclass(frozen=True)
class SamplingSettings:
    """Per-chat sampling; ``None`` leaves the worker's default."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    repeat_penalty: float | None = None
    max_tokens: int | None = None
    seed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Any) -> SamplingSettings:
        """Lenient: unknown keys and values of the wrong type are dropped."""
        if not isinstance(data, dict):
            return cls()
        values: dict[str, Any] = {}
        for f in fields(cls):
            value = data.get(f.name)
            if isinstance(value, bool) or value is None:
                continue
            if f.name in ("top_k", "max_tokens", "seed") and isinstance(value, int):
                values[f.name] = value
            elif f.name not in ("top_k", "max_tokens", "seed") and isinstance(value, int | float):
                values[f.name] = float(value)
        return cls(**values)

    @classmethod
    def from_json(cls, text: str | None) -> SamplingSettings:
        try:
            return cls.from_dict(json.loads(text or "{}"))
        except ValueError:
            return cls()

    def merged(self, overrides: SamplingSettings) -> SamplingSettings:
        """These settings with every non-None value of ``overrides`` on top."""
        return replace(self, **overrides.to_dict())


@dataclass(frozen=True)
class Preset:
    id: int
    name: str
    system_prompt: str = ""
    sampling: SamplingSettings = field(default_factory=SamplingSettings)
    builtin: bool = False


@dataclass(frozen=True)
class Conversation:
    id: int
    title: str
    created: float
    updated: float
    model: str | None = None
    system_prompt: str = ""
    sampling: SamplingSettings = field(default_factory=SamplingSettings)
    preset_id: int | None = None
    tool_choice: tuple[tuple[str, str], ...] = ()  # the MCP tools offered, (server, tool)


@dataclass(frozen=True)
class ReplyStats:
    """What the worker reported about one reply (any field may be unknown)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    tokens_per_s: float | None = None
    ttft_ms: float | None = None
    draft_tokens: int | None = None  # speculative decoding: tokens drafted for the reply
    accepted_tokens: int | None = None  # and how many of them the model accepted


class ToolOutcome(str, Enum):
    OK = "ok"
    ERROR = "error"  # the tool or its server failed: the model was told why
    DENIED = "denied"  # the user said no
    STOPPED = "stopped"  # Stop came while it ran (or waited for approval)


class ApprovedBy(str, Enum):
    """How a call was let through, or not: the export and the fold say so."""

    ONCE = "once"  # the user allowed this call
    ALWAYS = "always"  # the user chose "Always allow" for this tool of this server
    STANDING = "standing"  # an earlier "Always allow": not asked
    DENIED = "denied"  # the user said no


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call of a reply, as the chat keeps it."""

    step: int  # the model's answer (0, 1, ...) within the turn that made the call
    offset: int  # where in the reply's text the call came: the text before it is its own
    call_id: str  # the model's id for it, which the tool result names
    server: str
    tool: str
    arguments: str  # JSON text, as the model wrote it
    result: str  # what the model was given back
    outcome: ToolOutcome
    seconds: float | None = None  # how long the tool took (None: it never ran)
    approval: ApprovedBy | None = None  # None: never asked (an unknown tool, or Stop came)


@dataclass(frozen=True)
class Message:
    id: int
    conversation_id: int
    role: str
    content: str
    created: float
    status: MessageStatus = MessageStatus.COMPLETE
    detail: str | None = None  # why it was interrupted, or the error
    stats: ReplyStats = field(default_factory=ReplyStats)
    model: str | None = None  # the model that wrote this reply
    reasoning: str = ""  # the reply's reasoning, shown folded above it
    reasoning_ms: float | None = None  # how long the model thought
    variant_of: int | None = None  # the first reply of this one's group of regenerations
    variant_index: int = 0  # this reply's place among its group's variants
    variant_count: int = 1
    tool_calls: tuple[ToolCallRecord, ...] = ()  # the calls the reply made, in order

    @property
    def group(self) -> int:
        """The id every variant of this reply shares (the first variant's)."""
        return self.variant_of if self.variant_of is not None else self.id

    def as_chat(self) -> dict[str, str]:
        """The OpenAI chat message for this row."""
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class SearchHit:
    conversation_id: int
    title: str
    snippet: str  # matched words wrapped in [ ]
    message_id: int | None  # None when the title matched
    updated: float
