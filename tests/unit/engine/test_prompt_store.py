"""The prompt cache's folder: block-hash names, verified reads, LRU budget, bad files."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from hearth.core.prompt_cache import PromptCacheSettings
from hearth.engine.prompt_store import (
    BLOCK_TOKENS,
    PromptStore,
    block_chain,
    state_name,
    verify,
)

KEY = bytes(range(16))
OTHER_KEY = bytes(range(1, 17))
TOKENS = [(i * 37) % 5000 for i in range(3 * BLOCK_TOKENS + 10)]
PAYLOAD = bytes(range(256)) * 40


def store_in(folder: Path, budget: int = 1 << 30) -> PromptStore:
    folder.mkdir(parents=True, exist_ok=True)
    return PromptStore(folder, budget)


def saved(store: PromptStore, tokens: list[int] = TOKENS, payload: bytes = PAYLOAD) -> Path:
    name = state_name(KEY, tokens)
    assert store.write(name, KEY, tokens, memoryview(payload))
    return store.path_for(name)


def test_a_longer_prompt_s_chain_extends_the_shorter_one_block_by_block() -> None:
    chain = block_chain(KEY, TOKENS)
    assert len(chain) == 3  # the 10 tokens of the last, partial block are not named
    assert block_chain(KEY, TOKENS[: 2 * BLOCK_TOKENS]) == chain[:2]
    changed = TOKENS[:]
    changed[BLOCK_TOKENS + 5] += 1  # in the second block: the first name stays
    other = block_chain(KEY, changed)
    assert other[0] == chain[0] and other[1] != chain[1] and other[2] != chain[2]
    assert block_chain(OTHER_KEY, TOKENS)[0] != chain[0]  # another model, other names


def test_a_saved_state_reads_back_whole_and_its_use_refreshes_it(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    store = store_in(folder)
    path = saved(store)
    os.utime(path, (1_000_000, 1_000_000))
    state = store.read(state_name(KEY, TOKENS), KEY)
    assert state is not None
    assert state.tokens == TOKENS and bytes(state.payload) == PAYLOAD
    assert path.stat().st_mtime > 1_000_000  # a hit counts as use for the LRU order
    assert verify(path) is None
    assert [p.name for p in folder.iterdir()] == [path.name]  # no temp file left


def test_a_missing_state_is_a_miss(tmp_path: Path) -> None:
    store = PromptStore(tmp_path, budget=1 << 30)
    assert store.read(state_name(KEY, TOKENS), KEY) is None


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-100])


def _flip_payload_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-7] ^= 0xFF
    path.write_bytes(bytes(data))


def _flip_token(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[80] ^= 0x01  # a token id, right after the 72-byte header
    path.write_bytes(bytes(data))


def _garbage(path: Path) -> None:
    path.write_bytes(os.urandom(5000))


def _other_version(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[8] = 99
    path.write_bytes(bytes(data))


def _empty(path: Path) -> None:
    path.write_bytes(b"")


@pytest.mark.parametrize(
    "damage", [_truncate, _flip_payload_byte, _flip_token, _garbage, _other_version, _empty]
)
def test_a_damaged_file_is_a_miss_and_is_deleted(
    tmp_path: Path, damage: object, caplog: pytest.LogCaptureFixture
) -> None:
    store = PromptStore(tmp_path, budget=1 << 30)
    path = saved(store)
    assert callable(damage)
    damage(path)
    assert verify(path) is not None
    with caplog.at_level(logging.WARNING):
        assert store.read(state_name(KEY, TOKENS), KEY) is None
    assert not path.exists()
    assert "deleted" in caplog.text


def test_a_file_of_another_model_under_this_name_is_a_miss_and_is_deleted(
    tmp_path: Path,
) -> None:
    other = PromptStore(tmp_path, budget=1 << 30)
    name = state_name(KEY, TOKENS)
    assert other.write(name, OTHER_KEY, TOKENS, memoryview(PAYLOAD))  # foreign content
    assert other.read(name, KEY) is None
    assert not other.path_for(name).exists()


def test_the_budget_evicts_the_least_recently_used_first(tmp_path: Path) -> None:
    probe = store_in(tmp_path / "probe")
    one_file = saved(probe).stat().st_size
    store = store_in(tmp_path / "cache", budget=2 * one_file + one_file // 2)
    prompts = [[p, *TOKENS[1:]] for p in (11, 12, 13)]
    first, second = saved(store, prompts[0]), saved(store, prompts[1])
    os.utime(first, (1_000, 1_000))
    os.utime(second, (2_000, 2_000))
    assert store.read(state_name(KEY, prompts[0]), KEY) is not None  # first: used now
    third = saved(store, prompts[2])
    assert first.exists() and third.exists()
    assert not second.exists()
    assert store.size_bytes == 2 * one_file


def test_a_store_counts_what_other_workers_left_in_the_folder(tmp_path: Path) -> None:
    size = saved(PromptStore(tmp_path, budget=1 << 30)).stat().st_size
    assert PromptStore(tmp_path, budget=1 << 30).size_bytes == size


def test_an_unwritable_folder_turns_saving_off_with_one_log_line(
    unwritable_folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = PromptStore(unwritable_folder, budget=1 << 30)
    name = state_name(KEY, TOKENS)
    with caplog.at_level(logging.WARNING):
        assert not store.write(name, KEY, TOKENS, memoryview(PAYLOAD))
        assert not store.write(name, KEY, TOKENS, memoryview(PAYLOAD))
    assert not store.saving
    lines = [r for r in caplog.records if "saving is off" in r.getMessage()]
    assert len(lines) == 1
    assert store.read(name, KEY) is None  # reading still works: a plain miss


def test_a_folder_that_cannot_be_made_leaves_the_cache_off(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with caplog.at_level(logging.WARNING):
        assert PromptStore.open(PromptCacheSettings(folder=blocker / "cache")) is None
    assert "prompt cache off" in caplog.text


def test_the_default_budget_is_a_tenth_of_the_free_space_at_most_20_gib() -> None:
    gib = 1 << 30
    assert PromptCacheSettings(folder=Path()).budget(50 * gib) == 5 * gib
    assert PromptCacheSettings(folder=Path()).budget(1000 * gib) == 20 * gib
    assert PromptCacheSettings(folder=Path(), max_bytes=gib).budget(1000 * gib) == gib


def test_a_prompt_sharing_only_the_first_blocks_finds_the_state_that_holds_them(
    tmp_path: Path,
) -> None:
    """The same long system prompt with another first message: the saved state is
    named by all its tokens, yet found by the blocks the two prompts share."""
    store = store_in(tmp_path)
    saved(store)  # 3 blocks and 10 tokens
    other = TOKENS[: 2 * BLOCK_TOKENS] + [7] * (2 * BLOCK_TOKENS)  # shares 2 blocks
    found = store.find(block_chain(KEY, other))
    assert found == (state_name(KEY, TOKENS), 2)
    assert store.find(block_chain(KEY, [7] * 600)) is None
    assert store.find(block_chain(OTHER_KEY, TOKENS)) is None  # another model's names


def test_states_of_one_prompt_cut_at_different_lengths_get_different_names() -> None:
    """A sliding-window model saves a chat's prompt where its last message starts and
    at its end, often inside the same block: each must keep its own file."""
    ends = (2 * BLOCK_TOKENS, 2 * BLOCK_TOKENS + 5, 2 * BLOCK_TOKENS + 9, len(TOKENS))
    names = {state_name(KEY, TOKENS[:end]) for end in ends}
    assert len(names) == len(ends)
    assert state_name(KEY, TOKENS[: 2 * BLOCK_TOKENS]) == block_chain(KEY, TOKENS)[1]


def test_the_longest_state_a_prompt_extends_whole_is_found_not_one_it_leaves(
    tmp_path: Path,
) -> None:
    """States of a prompt's first 2 blocks + 5 tokens and its first 3 blocks + 10;
    a prompt that leaves the second inside its last, partial block extends only the
    first. (A sliding-window state serves no shorter prefix of itself.)"""
    store = store_in(tmp_path)
    short = TOKENS[: 2 * BLOCK_TOKENS + 5]
    saved(store, short)
    saved(store)
    other = [*TOKENS[: 3 * BLOCK_TOKENS + 4], 9, 9, 9, 9, 9, 9, 9]  # leaves TOKENS at 772

    def name_at(prompt: list[int]) -> Callable[[int], bytes]:
        return lambda n: state_name(KEY, prompt[:n]) if n <= len(prompt) else b""

    chain = block_chain(KEY, other)
    assert store.extended(chain, name_at(other)) == (state_name(KEY, short), len(short))
    longer = [*TOKENS, 1, 2, 3]
    found = store.extended(block_chain(KEY, longer), name_at(longer))
    assert found == (state_name(KEY, TOKENS), len(TOKENS))
    fresh = store_in(tmp_path)  # another process: the lengths come from the files
    assert fresh.extended(chain, name_at(other)) == (state_name(KEY, short), len(short))


def test_states_another_worker_saves_or_evicts_are_seen(tmp_path: Path) -> None:
    mine, theirs = store_in(tmp_path), store_in(tmp_path)
    chain = block_chain(KEY, TOKENS)
    assert mine.find(chain) is None
    path = saved(theirs)
    assert mine.find(chain) == (state_name(KEY, TOKENS), 3)
    path.unlink()
    assert mine.find(chain) is None


@pytest.mark.parametrize("damage", [_truncate, _garbage, _other_version, _empty])
def test_a_damaged_file_is_deleted_as_soon_as_a_lookup_sees_the_folder(
    tmp_path: Path, damage: object
) -> None:
    """A damaged header or length makes a file unfindable by its blocks: the lookup
    that indexes the folder deletes it rather than leave it taking space."""
    path = saved(store_in(tmp_path))
    assert callable(damage)
    damage(path)
    assert store_in(tmp_path).find(block_chain(KEY, TOKENS)) is None
    assert not path.exists()


def test_an_opened_store_takes_its_default_budget_from_its_own_disk(tmp_path: Path) -> None:
    store = PromptStore.open(PromptCacheSettings(folder=tmp_path / "cache"))
    assert store is not None
    free = shutil.disk_usage(tmp_path).free  # may move a little under other writers
    expected = min(free // 10, 20 << 30)
    assert abs(store.budget - expected) <= expected // 100 + (1 << 20)
