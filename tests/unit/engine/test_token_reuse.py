"""Which earlier ids a prompt may reuse (engine/token_reuse.py): byte-exact matching at
token boundaries, UTF-8 characters split across tokens, and the memo's order and bounds.
The tokenizer side runs on real llama.cpp in tests/integration/test_token_reuse.py."""

from __future__ import annotations

from hearth.engine.token_reuse import (
    Known,
    Reuse,
    TokenMemo,
    common_bytes,
    known_generation,
    reuse_of,
    tokenize_reusing,
)

PROMPT = "<s>user\nhi\nassistant\n"
PROMPT_IDS = (1, 50, 51, 52)


def known(pieces: list[bytes], text: str = PROMPT, add_special: bool = False) -> Known:
    ids = list(range(100, 100 + len(pieces)))
    return known_generation(text, add_special, PROMPT_IDS, ids, pieces)


def reuse(pieces: list[bytes], prompt: str) -> Reuse | None:
    return reuse_of(known(pieces), prompt, prompt.encode())


def test_common_bytes() -> None:
    assert common_bytes(b"abcdef", b"abcxef") == 3
    assert common_bytes(b"abc", b"abcdef") == 3
    assert common_bytes(b"", b"abc") == 0
    assert common_bytes(b"xbc", b"abc") == 0


def test_the_whole_reply_then_the_rest() -> None:
    found = reuse([b" he", b"l", b"lo"], PROMPT + " hello<end>next")
    assert found is not None
    assert found.tokens == (*PROMPT_IDS, 100, 101, 102)
    assert found.rest == "<end>next"


def test_a_reply_cut_inside_a_token_keeps_the_whole_tokens_before() -> None:
    """A stop string or a template's trim ends the text inside "lo": its id is dropped."""
    found = reuse([b" he", b"l", b"lo", b"!"], PROMPT + " hel<end>")
    assert found is not None
    assert found.tokens == (*PROMPT_IDS, 100, 101)
    assert found.rest == "<end>"


def test_a_character_split_across_tokens_is_never_cut() -> None:
    snow = "\u2603".encode()  # three bytes, sampled as two tokens
    pieces = [b" a", snow[:2], snow[2:]]
    whole = reuse(pieces, PROMPT + " a\u2603<end>")
    assert whole is not None and whole.rest == "<end>"
    assert whole.tokens[-3:] == (100, 101, 102)
    # The text has another character there: the match ends inside the first half.
    other = reuse(pieces, PROMPT + " a\u2604<end>")
    assert other is None  # the only token boundary inside it would split a character


def test_a_prompt_that_does_not_start_with_the_turn_gets_nothing() -> None:
    assert reuse([b"x"], "<s>user\nbye\nassistant\nx") is None


def test_ids_stop_at_the_first_piece_without_text() -> None:
    """A control token the client never saw cannot be in the next prompt's text."""
    entry = known([b" a", b"", b" b"])
    assert entry.generated == (100,) and entry.pieces == b" a"


def test_memo_offers_the_longest_reuse_first_and_forgets_the_oldest() -> None:
    memo = TokenMemo(2)
    memo.record(known([b" a"]))
    memo.record(known([b" a", b" b"]))
    offers = list(memo.candidates(PROMPT + " a b<end>", add_special=False))
    assert [len(r.tokens) for r in offers] == [6, 5]
    assert list(memo.candidates(PROMPT + " a b<end>", add_special=True)) == []  # BOS differs
    memo.record(known([b" c"]))
    memo.record(known([b" d"]))
    assert len(memo) == 2
    assert [r.rest for r in memo.candidates(PROMPT + " a b", add_special=False)] == [" a b"]


def test_reuse_only_where_a_special_token_opens_the_rest() -> None:
    """The rest is tokenized on its own only where the tokenizer cuts anyway."""
    specials = {7: "<end>"}
    calls: list[str] = []

    def tokenize(text: str) -> list[int]:
        calls.append(text)
        return [7, 8] if text.startswith("<end>") else [9] * len(text)

    memo = TokenMemo(4)
    memo.record(known([b" a", b" b"]))
    tokens = tokenize_reusing(memo, PROMPT + " a b<end>x", False, tokenize, specials)
    assert tokens == [*PROMPT_IDS, 100, 101, 7, 8]
    assert tokenize_reusing(memo, PROMPT + " a bc<end>", False, tokenize, specials) is None
    assert tokenize_reusing(memo, PROMPT + " a b", False, tokenize, specials) == [
        *PROMPT_IDS, 100, 101,
    ]  # fmt: skip
