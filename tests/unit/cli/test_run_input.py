"""How ``hearth run`` reads a message from the terminal."""

from __future__ import annotations

from hearth.cli.run import read_message


def _lines(*lines: str):
    queue = list(lines)
    prompts: list[str] = []

    def read(prompt: str) -> str:
        prompts.append(prompt)
        return queue.pop(0)

    return read, prompts


def test_one_line():
    read, prompts = _lines("hello there")
    assert read_message(read) == "hello there"
    assert prompts == [">>> "]


def test_multi_line_between_triple_quotes():
    read, prompts = _lines('"""first', "second", 'third"""')
    assert read_message(read) == "first\nsecond\nthird"
    assert prompts == [">>> ", "... ", "... "]


def test_triple_quotes_on_one_line():
    read, _ = _lines('"""just this"""')
    assert read_message(read) == "just this"
