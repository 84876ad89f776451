"""A reply taken apart: reasoning, the answer, and tool calls, as it streams or whole.

The reasoning splitter runs first (its block opens the reply, and harmony's channels
frame everything after it), then the tool-call filter on what is left. Both hold back a
marker split across tokens until it is decided, so what streams out is final. The
pipeline uses one of these per generation; the dialects never see markers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hearth.core.generation import ToolCall, ToolSpec
from hearth.engine.reasoning import HARMONY, ReasoningSpec, make_splitter
from hearth.engine.tool_calls import ToolCallFilter, ToolFormat, preserved_tokens


@dataclass(frozen=True)
class ReplyPart:
    """What one chunk of generated text turned out to be (either part may be empty)."""

    reasoning: str
    content: str


@dataclass(frozen=True)
class ReplyEnd:
    """The rest of a reply once generation ended: held-back text, then the calls."""

    reasoning: str
    content: str
    calls: tuple[ToolCall, ...]


def marker_texts(
    reasoning: ReasoningSpec | None, tool_format: ToolFormat | None
) -> tuple[str, ...]:
    """The markers a reply must keep as text to be taken apart (tool markers only when
    tools were offered: ``tool_format`` is None otherwise)."""
    texts: list[str] = []
    if reasoning is not None:
        texts += reasoning.preserved
        if reasoning is HARMONY:  # channel headers frame every harmony message
            texts += preserved_tokens(ToolFormat.HARMONY)
    if tool_format is not None:
        texts += preserved_tokens(tool_format)
    return tuple(dict.fromkeys(texts))


@dataclass(frozen=True)
class ReplyShape:
    """How one request's reply is taken apart: the model's reasoning markers (with the
    rendered prompt, which may have opened the block) and the call format when tools
    were offered."""

    reasoning: ReasoningSpec | None = None
    prompt: str = ""
    tool_format: ToolFormat | None = None
    tools: tuple[ToolSpec, ...] = ()

    def splitter(self) -> ReplySplitter:
        return ReplySplitter(self.reasoning, self.prompt, self.tool_format, self.tools)


class ReplySplitter:
    """Streams a reply's reasoning and answer apart and holds tool calls to parse."""

    def __init__(
        self,
        reasoning: ReasoningSpec | None,
        prompt: str,
        tool_format: ToolFormat | None,
        tools: Sequence[ToolSpec] = (),
    ) -> None:
        self._splitter = make_splitter(reasoning, prompt) if reasoning is not None else None
        self._filter = ToolCallFilter(tool_format, tools) if tool_format is not None else None
        self._spaces = ""  # reasoning's trailing whitespace, sent only if more follows

    def feed(self, text: str) -> ReplyPart:
        reasoning, content = ("", text)
        if self._splitter is not None:
            reasoning, content = self._splitter.feed(text)
        if self._filter is not None and content:
            content = self._filter.feed(content)
        return ReplyPart(self._trimmed(reasoning), content)

    def _trimmed(self, reasoning: str) -> str:
        """Reasoning without the whitespace before its closing marker (``\n</think>``),
        as llama-server trims it; whitespace inside it is kept."""
        if not reasoning:
            return ""
        text = self._spaces + reasoning
        kept = text.rstrip()
        self._spaces = text[len(kept) :]
        return kept

    def finish(self) -> ReplyEnd:
        reasoning, content = ("", "")
        if self._splitter is not None:
            reasoning, content = self._splitter.finish()
            reasoning = self._trimmed(reasoning)
        if self._filter is None:
            return ReplyEnd(reasoning, content, ())
        content = self._filter.feed(content) if content else ""
        parsed = self._filter.finish()
        # A format whose own parser finds reasoning (Command-R inside an action block).
        reasoning = "\n".join(r for r in (reasoning, parsed.reasoning) if r)
        return ReplyEnd(reasoning, content + parsed.content, tuple(parsed.calls))

    def whole(self, pieces: Iterable[str]) -> ReplyEnd:
        """A whole reply at once: the same splitting as streaming, joined up."""
        reasoning: list[str] = []
        content: list[str] = []
        for piece in pieces:
            part = self.feed(piece)
            reasoning.append(part.reasoning)
            content.append(part.content)
        end = self.finish()
        return ReplyEnd(
            "".join(reasoning) + end.reasoning, "".join(content) + end.content, end.calls
        )
