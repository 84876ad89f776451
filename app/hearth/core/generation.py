"""Requests into the engine and the events that stream back out of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from hearth.core.errors import HearthError
from hearth.core.images import ImageInput
from hearth.core.sampling import SamplingParams


class FinishReason(str, Enum):
    """Why a generation ended; values match the OpenAI wire names."""

    STOP = "stop"
    LENGTH = "length"
    CANCELLED = "cancelled"
    ERROR = "error"
    TOOL_CALLS = "tool_calls"  # set by the server's pipeline when the reply was calls


@dataclass(frozen=True)
class ToolCall:
    """A function call the model asked for; ``arguments`` is a JSON object as text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ToolSpec:
    """A function the model may call, with its JSON-schema parameters."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ChatMessage:
    role: str
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    reasoning: str = ""  # an assistant turn's thinking, handed back as ``reasoning_content``
    images: tuple[ImageInput, ...] = ()  # in order; each stands at an IMAGE_MARKER in content


@dataclass(frozen=True)
class GenerationRequest:
    """One unit of work for the scheduler.

    Exactly one of ``prompt`` (raw text, tokenized with special tokens parsed) or
    ``prompt_tokens`` is used; ``add_bos`` applies only to ``prompt``. ``images`` go
    with ``prompt``, the i-th where its i-th ``IMAGE_MARKER`` stands.
    """

    prompt: str = ""
    prompt_tokens: tuple[int, ...] | None = None
    add_bos: bool = True
    params: SamplingParams = field(default_factory=SamplingParams)
    request_id: str = ""  # given at the HTTP edge; it comes back on the Finished event
    images: tuple[ImageInput, ...] = ()
    # A chat's prompt as it would read with another last message ("": not worked out).
    # Where its tokens leave ``prompt``'s is where this conversation's next request will
    # likely leave it: a sliding-window model's prompt cache saves its state there.
    branch_prompt: str = ""


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Timings:
    """Per-request timings, reported alongside usage."""

    queued_ms: float
    prompt_ms: float
    ttft_ms: float
    decode_ms: float
    decode_tokens_per_s: float
    draft_tokens: int = 0  # speculative decoding: tokens drafted for this request
    accepted_tokens: int = 0  # and how many of them the model accepted
    cache_disk_tokens: int = 0  # cached prompt tokens restored from disk for it
    image_ms: float = 0.0  # of prompt_ms, the vision encoder's time on its images
    image_tokens: int = 0  # of the prompt's tokens, image embeddings encoded for it


@dataclass(frozen=True)
class TokenAlternative:
    text: str
    raw: bytes
    logprob: float


@dataclass(frozen=True)
class TokenLogprob:
    """A sampled token's log-probability under the model, and the top alternatives."""

    text: str
    raw: bytes
    logprob: float
    top: tuple[TokenAlternative, ...] = ()


@dataclass(frozen=True)
class TextDelta:
    """A piece of generated text that is safe to show (valid UTF-8, not a stop prefix).

    ``logprobs`` covers the tokens sampled since the previous delta, when asked for.
    """

    text: str
    logprobs: tuple[TokenLogprob, ...] = ()


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of the model's reasoning ("thinking"), split from the reply it precedes."""

    text: str


@dataclass(frozen=True)
class Finished:
    """The last event of every request, successful or not."""

    reason: FinishReason
    usage: Usage
    timings: Timings | None = None
    error: str | None = None
    request_id: str = ""
    stop_sequence: str | None = None  # the stop string that ended it, when one did


GenerationEvent = TextDelta | Finished


@dataclass(frozen=True)
class ToolCallsMade:
    """The tool calls parsed out of a reply, sent once, just before it finishes."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True)
class Failed:
    """A generation that could not finish; the last event of its stream."""

    error: HearthError
