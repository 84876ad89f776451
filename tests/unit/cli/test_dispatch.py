"""The CLI parses every verb into its own handler, and hands the GUI back to __main__
(the cli package never imports Qt)."""

from __future__ import annotations

import sys

import pytest

from hearth.cli import build_parser, main

VERBS = ("serve", "config", "ls", "rm", "import", "fit", "quantize", "search", "pull",
         "login", "logout", "keys", "paths")  # fmt: skip


def test_every_verb_has_a_handler() -> None:
    parser = build_parser()
    samples = {"config": ["curl"], "rm": ["m"], "fit": ["m"], "quantize": ["a.gguf", "Q8_0"],
               "pull": ["o/r"], "keys": ["list"]}  # fmt: skip
    for verb in VERBS:
        args = parser.parse_args([verb, *samples.get(verb, [])])
        assert callable(args.handler), verb


def test_gui_is_handed_back_with_the_model() -> None:
    opened: list[list[str]] = []

    def open_gui(argv: list[str]) -> int:
        opened.append(argv)
        return 7

    assert main(["gui", "model.gguf"], open_gui=open_gui) == 7
    assert main(["-v"], open_gui=open_gui) == 7
    assert opened == [[sys.argv[0], "model.gguf"], [sys.argv[0]]]


@pytest.mark.parametrize("store", ["keyring", "file"])
def test_secret_writers_take_a_store(store: str) -> None:
    parser = build_parser()
    assert parser.parse_args(["login", "--store", store]).store == store
    assert parser.parse_args(["keys", "create", "laptop", "--store", store]).store == store
    with pytest.raises(SystemExit):
        parser.parse_args(["login", "--store", "vault"])
