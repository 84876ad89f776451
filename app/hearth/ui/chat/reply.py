"""One streamed reply, read into the view and the store as it arrives.

Reasoning (``reasoning_content``, or a ``<think>`` block the splitter finds) is folded
above the answer; the answer is shown and recorded delta by delta; the last event
carries the worker's stats. Split from ``chat_session.py``, which starts and ends the
turns.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator

from hearth.chats import ReplyRecorder
from hearth.supervisor import ChatStreamStats
from hearth.supervisor.client import ReasoningText
from hearth.ui.chat.rows import TurnState
from hearth.ui.chat.view import ChatView

YIELD_EVERY_S = 0.012  # while a stream drains a backlog, give the Qt loop a turn this often


async def read_reply(
    view: ChatView,
    state: TurnState,
    stream: AsyncGenerator[str | ChatStreamStats, None],
    recorder: ReplyRecorder | None,
) -> None:
    """Show and record ``stream``'s events until it ends (or the task is cancelled)."""
    breather = time.monotonic() + YIELD_EVERY_S
    async with contextlib.aclosing(stream):
        async for event in stream:
            if time.monotonic() > breather:
                # Lines already buffered are read without returning to the event
                # loop; after a burst (the app was descheduled) let Qt paint.
                await asyncio.sleep(0)
                breather = time.monotonic() + YIELD_EVERY_S
            if isinstance(event, ReasoningText):  # reasoning_content: folded above
                state.deltas += 1
                state.think.add_reasoning(event)
                if state.first_delta is None:
                    state.first_delta = time.monotonic()
                    view.set_stats("Thinking…")
            elif isinstance(event, str):
                if state.first_delta is None:
                    state.first_delta = time.monotonic()
                state.deltas += 1
                answer = state.think.feed(event)
                if answer:
                    show_answer(view, state, answer, recorder)
                elif state.deltas == 1 and state.think.thinking:
                    view.set_stats("Thinking…")
            else:
                state.stats = event


def show_answer(
    view: ChatView, state: TurnState, text: str, recorder: ReplyRecorder | None
) -> None:
    """Text of the answer: shown (below the reasoning's fold) and recorded."""
    if not state.parts:
        show_reasoning(view, state)
    state.parts.append(text)
    view.append_delta(text)
    if recorder is not None:
        recorder.append(text)


def show_reasoning(view: ChatView, state: TurnState) -> None:
    """The reasoning's fold, once, when there was reasoning."""
    if state.reasoning_shown or not state.think.reasoning:
        return
    state.reasoning_shown = True
    reply = state.reply
    reply.reasoning = state.think.reasoning
    seconds = state.think.seconds
    reply.reasoning_ms = seconds * 1000 if seconds is not None else None
    view.show_reasoning(reply.meta())
