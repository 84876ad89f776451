"""How a chat turn ends on screen: the outcome named, the streamed state settled into
the reply, a turn that made nothing taken back, the footer.

``ChatController`` starts a turn and owns the store and its signals; once the streaming
task is done it hands this module the view, its turns and the turn's state, and gets
back what the rest of the ending needs (the outcome to announce, whether the rows are
to be dropped). Everything here runs on the Qt thread and touches no disk.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from hearth.chats import MessageStatus
from hearth.supervisor import WorkerError, WorkerUnavailableError
from hearth.ui.chat.reply import show_answer, show_reasoning
from hearth.ui.chat.rows import TurnState
from hearth.ui.chat.turns import Turn, draw_turns, local_stats, reply_stats, stats_text
from hearth.ui.chat.view import ChatView

log = logging.getLogger(__name__)

STOPPED = "stopped"


@dataclass(frozen=True)
class TurnEnd:
    outcome: str
    """For ``generation_finished``: "done", "stopped" or "error"."""
    dropped: bool
    """Nothing came back: the turn was taken back, its rows are to be deleted."""


def turn_outcome(
    task: asyncio.Task[str | None],
) -> tuple[str, str | None, MessageStatus, str | None]:
    """How a finished streaming task ended: (outcome for ``generation_finished``, the
    note shown after the reply, the row's status, the row's detail)."""
    if task.cancelled():
        return "stopped", STOPPED, MessageStatus.INTERRUPTED, "Stopped"
    exc = task.exception()
    if exc is not None:
        detail = exc.message if isinstance(exc, WorkerError) else str(exc)
        if isinstance(exc, WorkerUnavailableError):  # the worker died: keep the text
            return "error", f"interrupted: {detail}", MessageStatus.INTERRUPTED, detail
        return "error", f"Error: {detail}", MessageStatus.ERROR, detail
    error = task.result()
    if error is not None:
        return "error", f"Error: {error}", MessageStatus.ERROR, error
    return "done", None, MessageStatus.COMPLETE, None


def end_turn(
    view: ChatView,
    turns: list[Turn],
    state: TurnState,
    task: asyncio.Task[str | None],
    n_ctx: int | None,
) -> TurnEnd:
    """Show how the turn of ``task`` ended and settle ``state.reply``; a turn that made
    nothing is taken out of ``turns``. ``n_ctx``: the context size for the footer."""
    outcome, note, status, detail = turn_outcome(task)
    note = "; ".join(n for n in (note, *state.notes) if n) or None
    reply = state.reply
    _settle(view, state, status, detail)
    made = reply.content or reply.reasoning or reply.tool_calls  # calls are kept too
    dropped = not made and outcome != "done"
    if dropped:
        _take_back(view, turns, state)
    view.end_assistant_turn(note, error=outcome == "error")
    reply.sources = () if dropped else state.sources
    if reply.sources:
        view.add_sources(len(turns) - 1, reply.sources, False)
    if dropped and state.variant_of is not None:
        draw_turns(view, turns)
    view.set_generating(False)
    view.set_can_regenerate(bool(turns) and turns[-1].role == "assistant")
    if state.stats is not None:
        view.set_stats(stats_text(state.stats, n_ctx))
    elif reply.stats is not None:
        view.set_stats(f"{stats_text(reply.stats, n_ctx)} · {outcome}")
    return TurnEnd(outcome, dropped)


def _settle(view: ChatView, state: TurnState, status: MessageStatus, detail: str | None) -> None:
    """The reply's text, reasoning, status and stats, from what streamed."""
    reply = state.reply
    tail = state.think.finish()
    if tail:
        show_answer(view, state, tail, None)
    show_reasoning(view, state)  # stopped while thinking: the fold, with no answer
    reply.reasoning = state.think.reasoning
    reply.content = "".join(state.parts)
    reply.status, reply.detail = status, detail
    reply.stats = reply_stats(state.stats)
    if reply.stats is None and state.deltas:  # stopped: no summary came, measure here
        reply.stats = local_stats(state.deltas, state.started, state.first_delta, time.monotonic())


def _take_back(view: ChatView, turns: list[Turn], state: TurnState) -> None:
    """Nothing came back: drop the question so roles keep alternating, and give the
    text back to the input for another try."""
    turns.remove(state.reply)
    if state.variant_of is not None:
        turns.append(state.variant_of)  # the reply it was to replace
    if state.user is not None and state.user in turns:
        turns.remove(state.user)
        if not view.input.toPlainText():
            view.input.setPlainText(state.user.content)
        view.composer.images.put_back(state.user.images)
