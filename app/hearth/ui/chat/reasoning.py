"""Reasoning split off a streamed reply, to be folded above the answer.

The worker's API sends reasoning apart (``reasoning_content``) for the model families
it knows; for the others a reply may still open with ``<think>``. ``ThinkSplitter``
takes the streamed text as it comes (a tag may be cut across deltas) and routes each
piece to the reasoning or to the answer, timing how long the model thought.
"""

from __future__ import annotations

import time
from collections.abc import Callable

OPEN, CLOSE = "<think>", "</think>"


class ThinkSplitter:
    """Feed deltas; read ``answer_delta`` results and ``reasoning`` so far."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._started = clock()
        self._state = "start"  # start (may open a block), think, gap, answer
        self._held = ""  # text that may be the start of a tag
        self.reasoning_parts: list[str] = []
        self.seconds: float | None = None  # how long it thought, once the answer began

    @property
    def reasoning(self) -> str:
        return "".join(self.reasoning_parts).strip()

    @property
    def thinking(self) -> bool:
        return self._state == "think"

    def add_reasoning(self, text: str) -> None:
        """Reasoning the API sent apart (``reasoning_content``)."""
        self.reasoning_parts.append(text)

    def feed(self, text: str) -> str:
        """The part of ``text`` that belongs to the answer (may be empty)."""
        if self._state == "answer":
            return text
        if self._state == "gap":  # the blank lines between the block and the answer
            text = text.lstrip()
            return self._answer(text) if text else ""
        buf = self._held + text
        self._held = ""
        if self._state == "start":
            stripped = buf.lstrip()
            if OPEN.startswith(stripped) and len(stripped) < len(OPEN):
                self._held = buf  # maybe the tag, cut short: wait for more
                return ""
            if not stripped.startswith(OPEN):
                return self._answer(buf)
            self._state = "think"
            buf = stripped[len(OPEN) :]
        end = buf.find(CLOSE)
        if end < 0:
            keep = _partial_suffix(buf, CLOSE)
            self.reasoning_parts.append(buf[: len(buf) - keep])
            self._held = buf[len(buf) - keep :]
            return ""
        self.reasoning_parts.append(buf[:end])
        self.seconds = self._clock() - self._started
        self._state = "gap"
        return self.feed(buf[end + len(CLOSE) :])

    def finish(self) -> str:
        """The stream ended: what was held back (an unfinished tag) goes where it was."""
        held, self._held = self._held, ""
        if self._state == "think":
            self.reasoning_parts.append(held)
            if self.seconds is None:
                self.seconds = self._clock() - self._started
            return ""
        return held

    def _answer(self, text: str) -> str:
        if self._state != "answer":
            self._state = "answer"
            if self.reasoning_parts and self.seconds is None:
                self.seconds = self._clock() - self._started
        return text


def _partial_suffix(text: str, tag: str) -> int:
    """How many characters at the end of ``text`` could begin ``tag``."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-n:]):
            return n
    return 0
