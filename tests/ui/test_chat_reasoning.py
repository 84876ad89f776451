"""Reasoning split off a streamed reply (``<think>`` blocks cut anywhere, or sent apart)."""

from __future__ import annotations

import pytest

from hearth.ui.chat.reasoning import ThinkSplitter

REPLY = "<think>\nThe user greets me.\nBe brief.\n</think>\n\nHello! How can I help?"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, len(REPLY)])
def test_a_think_block_is_split_at_any_cut(size: int) -> None:
    clock = Clock()
    split = ThinkSplitter(clock)
    answer = ""
    for i in range(0, len(REPLY), size):
        clock.now += 0.1
        answer += split.feed(REPLY[i : i + size])
    answer += split.finish()
    assert answer == "Hello! How can I help?"
    assert split.reasoning == "The user greets me.\nBe brief."
    assert split.seconds is not None and split.seconds > 0


def test_a_plain_reply_is_all_answer() -> None:
    split = ThinkSplitter()
    text = "<b>bold</b> and <thinking> later"
    got = "".join(split.feed(c) for c in text) + split.finish()
    assert got == text and split.reasoning == "" and split.seconds is None


def test_reasoning_sent_apart_and_a_stop_while_thinking() -> None:
    clock = Clock()
    split = ThinkSplitter(clock)
    split.add_reasoning("Counting ")
    split.add_reasoning("to three.")
    clock.now += 2.5
    assert split.feed("1, 2, 3") == "1, 2, 3"
    assert (split.reasoning, split.seconds) == ("Counting to three.", 2.5)

    stopped = ThinkSplitter(clock)
    assert stopped.feed("<think>Still going</thi") == ""
    assert stopped.thinking
    assert stopped.finish() == ""
    assert stopped.reasoning == "Still going</thi"
