"""The /infill prompt layout and the cursor stop rules, on a character tokenizer."""

from __future__ import annotations

from hearth.core.fim import FimLayout
from hearth.server.infill_format import CursorLimits
from hearth.server.infill_prompt import SNIPPET_SEPARATOR, ExtraFile, InfillParts, infill_tokens

PRE, SUF, MID, REP, SEP, BOS = 1, 2, 3, 4, 5, 6


def chars(text: str) -> list[int]:
    """One token per character, ids far from the special ones."""
    return [1000 + ord(c) for c in text]


def text_of(tokens: list[int]) -> str:
    names = {PRE: "[PRE]", SUF: "[SUF]", MID: "[MID]", REP: "[REP]", SEP: "[SEP]", BOS: "[BOS]"}
    return "".join(names.get(t) or chr(t - 1000) for t in tokens)


def test_plain_fim_layout_puts_the_prompt_after_the_prefix():
    layout = FimLayout(PRE, SUF, MID, bos=BOS)
    tokens = infill_tokens(
        layout, chars, InfillParts("ab", "cd", prompt="x"), n_ctx=4096, n_predict=16
    )
    assert text_of(tokens) == "[BOS][PRE]abx[SUF]cd[MID]"


def test_repository_layout_names_each_file():
    layout = FimLayout(PRE, SUF, MID, rep=REP, sep=SEP)
    extra = (ExtraFile("u.py", "U"), ExtraFile("v.py", "V"))
    tokens = infill_tokens(
        layout, chars, InfillParts("p", "s", extra=extra), n_ctx=4096, n_predict=8
    )
    assert text_of(tokens) == (
        "[REP]myproject\n[SEP]u.py\nU[SEP]v.py\nV[SEP]filename\n[PRE]p[SUF]s[MID]"
    )


def test_without_a_file_separator_snippets_are_separated_by_text():
    layout = FimLayout(PRE, SUF, MID)
    extra = (ExtraFile("u.py", "U"),)
    tokens = infill_tokens(
        layout, chars, InfillParts("p", "s", extra=extra), n_ctx=4096, n_predict=8
    )
    assert text_of(tokens) == f"{SNIPPET_SEPARATOR}U[PRE]p[SUF]s[MID]"


def test_prefix_keeps_its_end_and_suffix_its_start_within_the_batch():
    layout = FimLayout(PRE, SUF, MID, n_batch=64)  # 48 tokens of prefix, 14 of suffix
    parts = InfillParts("a" * 100 + "END", "START" + "b" * 100)
    text = text_of(infill_tokens(layout, chars, parts, n_ctx=4096, n_predict=8))
    prefix, suffix = text.split("[SUF]")
    assert prefix == "[PRE]" + ("a" * 100 + "END")[-48:]
    assert suffix == ("START" + "b" * 100)[:14] + "[MID]"


def test_extra_context_keeps_the_most_recent_and_leaves_room_to_answer():
    layout = FimLayout(PRE, SUF, MID, sep=SEP, n_batch=2048)
    extra = tuple(ExtraFile(f"f{i}", "x" * 50) for i in range(40))
    n_ctx, n_predict = 512, 64
    tokens = infill_tokens(
        layout, chars, InfillParts("p", "s", extra=extra), n_ctx=n_ctx, n_predict=n_predict
    )
    assert len(tokens) + n_predict <= n_ctx
    text = text_of(tokens)
    assert text.endswith("x" * 50 + "[SEP]filename\n[PRE]p[SUF]s[MID]")
    assert "f39\n" in text and "f0\n" not in text


def test_n_indent_cuts_a_line_less_indented_than_the_cursor():
    limits = CursorLimits(n_indent=4, t_max_predict_ms=0)
    assert limits.feed("x = 1\n") == ("x = 1\n", False)
    assert limits.feed("    y = 2\n  ") == ("    y = 2\n  ", False)
    assert limits.feed("z") == ("", True)


def test_n_indent_cut_inside_one_piece():
    limits = CursorLimits(n_indent=2, t_max_predict_ms=0)
    assert limits.feed("a\n  b\nc\n") == ("a\n  b\n", True)


def test_time_limit_stops_at_the_next_newline():
    now = [0.0]
    limits = CursorLimits(n_indent=0, t_max_predict_ms=100, clock=lambda: now[0])
    assert limits.feed("a\n") == ("a\n", False)
    now[0] = 0.5
    assert limits.feed("bc") == ("bc", False)  # late, but mid-line: finish the line
    assert limits.feed("d\n") == ("d\n", True)
