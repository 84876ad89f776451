"""Plain pieces of a chat session: turns, session overrides, titles and the footer."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hearth.chats import Message, MessageStatus, ReplyStats, SamplingSettings, ToolCallRecord
from hearth.chats.attachments import PassageHit
from hearth.chats.images import ImageData
from hearth.supervisor import ChatStreamStats
from hearth.ui.chat.message_card import CardMeta

if TYPE_CHECKING:
    from hearth.ui.chat.view import ChatView

TITLE_CHARS = 60


@dataclass
class ChatSettings:
    """Session-wide overrides (tests, automation): non-None values win over the chat's."""

    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None  # a fixed seed makes replies repeatable (tests)
    logit_bias: dict[int, float] | None = None  # e.g. keep a test model from ending early

    def as_sampling(self) -> SamplingSettings:
        return SamplingSettings(
            temperature=self.temperature, max_tokens=self.max_tokens, seed=self.seed
        )


@dataclass
class Turn:
    role: str
    content: str
    id: int | None = None  # set on the store's thread once the row exists
    status: MessageStatus = MessageStatus.COMPLETE
    detail: str | None = None
    stats: ReplyStats | None = None
    model: str | None = None  # who wrote the reply
    reasoning: str = ""
    reasoning_ms: float | None = None
    variant_index: int = 0  # among the reply's regenerations
    variant_count: int = 1
    reasoning_open: bool = False  # the fold, as the user left it (not saved)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)  # folded in the text
    tools_open: set[int] = field(default_factory=set)  # the calls opened (not saved)
    sources: tuple[PassageHit, ...] = ()  # the passages of the documents it was given
    sources_open: bool = False
    images: list[ImageData] = field(default_factory=list)  # a user message's, in order

    def request_message(self) -> dict[str, Any]:
        """This turn as an OpenAI chat message: with images, its content is parts (the
        images as ``image_url`` data URLs, then the text), as vision clients send."""
        if not self.images:
            return {"role": self.role, "content": self.content}
        parts: list[dict[str, Any]] = [
            {"type": "image_url", "image_url": {"url": data_url(i)}} for i in self.images
        ]
        if self.content:
            parts.append({"type": "text", "text": self.content})
        return {"role": self.role, "content": parts}

    def meta(self) -> CardMeta:
        """What the reply's card shows besides its text."""
        seconds = self.reasoning_ms / 1000 if self.reasoning_ms is not None else None
        return CardMeta(
            model=self.model,
            variant=(self.variant_index, self.variant_count),
            reasoning=self.reasoning,
            reasoning_s=seconds,
            reasoning_open=self.reasoning_open,
            tools=tuple(self.tool_calls),
            tools_open=frozenset(self.tools_open),
        )

    @classmethod
    def from_message(cls, m: Message) -> Turn:
        return cls(
            m.role,
            m.content,
            m.id,
            m.status,
            m.detail,
            m.stats,
            m.model,
            m.reasoning,
            m.reasoning_ms,
            m.variant_index,
            m.variant_count,
            tool_calls=list(m.tool_calls),
        )


def data_url(item: ImageData) -> str:
    return f"data:{item.image.mime};base64,{base64.b64encode(item.data).decode('ascii')}"


def title_for(text: str) -> str:
    words = " ".join(text.split())
    return words if len(words) <= TITLE_CHARS else words[: TITLE_CHARS - 1].rstrip() + "…"


def draft_acceptance(drafted: object, accepted: object) -> str | None:
    """ "drafts 78% accepted" for a speculative reply (the worker's ``timings``
    ``draft_tokens`` / ``accepted_tokens``); None when nothing was drafted."""
    if not isinstance(drafted, int) or not isinstance(accepted, int) or drafted <= 0:
        return None
    return f"drafts {100 * accepted / drafted:.0f}% accepted"


def stats_text(stats: ChatStreamStats | ReplyStats | None, n_ctx: int | None) -> str:
    """The footer: tok/s (and, for a speculative reply, how many drafted tokens the
    model accepted), TTFT and context used / total."""
    if stats is None:
        return ""
    parts = []
    if stats.tokens_per_s is not None:
        parts.append(f"{stats.tokens_per_s:.1f} tok/s")
    # Both kinds carry the draft counts: the stream's, and a saved reply's (schema v4).
    acceptance = draft_acceptance(stats.draft_tokens, stats.accepted_tokens)
    if acceptance is not None:
        parts.append(acceptance)
    if stats.ttft_ms is not None:
        parts.append(f"TTFT {stats.ttft_ms:.0f} ms")
    if stats.completion_tokens is not None:
        n = stats.completion_tokens
        parts.append(f"{n} token" if n == 1 else f"{n} tokens")
    if stats.prompt_tokens is not None:
        used = stats.prompt_tokens + (stats.completion_tokens or 0)
        parts.append(f"context {used} / {n_ctx if n_ctx else '?'}")
    return " · ".join(parts)


def local_stats(deltas: int, started: float, first: float | None, now: float) -> ReplyStats:
    """Stats measured here, for a reply the worker never summed up (a stopped one).

    Each streamed delta carries one token (the worker sends a delta per token), so
    the count is the number of deltas; times are ``time.monotonic()`` values.
    """
    ttft = (first - started) * 1000 if first is not None else None
    span = now - first if first is not None else 0.0
    rate = (deltas - 1) / span if deltas > 1 and span > 0 else None
    return ReplyStats(completion_tokens=deltas, tokens_per_s=rate, ttft_ms=ttft)


def reply_stats(stats: ChatStreamStats | None) -> ReplyStats | None:
    if stats is None:
        return None
    return ReplyStats(
        prompt_tokens=stats.prompt_tokens,
        completion_tokens=stats.completion_tokens,
        cached_tokens=stats.cached_tokens,
        tokens_per_s=stats.tokens_per_s,
        ttft_ms=stats.ttft_ms,
        draft_tokens=stats.draft_tokens,
        accepted_tokens=stats.accepted_tokens,
    )


def request_args(sampling: SamplingSettings, settings: ChatSettings) -> dict[str, Any]:
    """The chat request's sampling fields (those left unset are not sent)."""
    args: dict[str, Any] = {
        k: v
        for k, v in (
            ("temperature", sampling.temperature),
            ("top_p", sampling.top_p),
            ("max_tokens", sampling.max_tokens),
            ("seed", sampling.seed),
            ("top_k", sampling.top_k),
            ("min_p", sampling.min_p),
            ("repeat_penalty", sampling.repeat_penalty),
        )
        if v is not None
    }
    if settings.logit_bias:
        args["logit_bias"] = {str(k): v for k, v in settings.logit_bias.items()}
    return args


def draw_turns(view: ChatView, turns: list[Turn]) -> None:
    """Draw a conversation into ``view`` from scratch (history, or after a change)."""
    view.clear_transcript()
    for index, turn in enumerate(turns):
        if turn.role == "user":
            view.add_user_turn(turn.content, index, turn.images)
            continue
        note = None
        if turn.status is not MessageStatus.COMPLETE:
            note = f"{turn.status.value}: {turn.detail}" if turn.detail else turn.status.value
        view.add_assistant_message(
            turn.content,
            note,
            error=turn.status is MessageStatus.ERROR,
            index=index,
            meta=turn.meta(),
        )
        if turn.sources:
            view.add_sources(index, turn.sources, turn.sources_open)
