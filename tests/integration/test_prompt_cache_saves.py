"""A save costs the decode loop only the copy of the state: the folder's listing (other
workers' files), the check that the disk has it already, the write and the size budget's
eviction all happen on the writer thread.

Another worker's file that is stuck on a slow disk is a named pipe of a state's name:
opening it blocks until the test opens its other end. Nothing is timed: the save must
return while the pipe is still unopened on the other side.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import llama_cpp
import pytest

from hearth.core.model_info import LoadConfig
from hearth.engine.model import LlamaModel
from hearth.engine.prompt_cache import PromptCache, model_key
from hearth.engine.prompt_store import PromptStore, block_chain, state_name
from hearth.engine.slots import Slot
from held_pipes import WAIT_S, open_other_end

MIN_TOKENS = 256


def prompt(seed: int) -> list[int]:
    """300 tokens: one block of 256 and some, different for each seed."""
    return [1, *(300 + (i * 7 + seed * 13) % 200 for i in range(299))]


@pytest.fixture
def model(tiny_model_f16: Path) -> Iterator[LlamaModel]:
    loaded = LlamaModel(LoadConfig(model_path=tiny_model_f16, n_ctx=1024, n_parallel=1,
                                   n_threads=2))  # fmt: skip
    yield loaded
    loaded.close()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    made = tmp_path / "cache"
    made.mkdir()
    return made


def evaluated(model: LlamaModel, tokens: Sequence[int]) -> Slot:
    """Slot 0 holding ``tokens``, evaluated by llama.cpp as the scheduler would."""
    llama_cpp.llama_memory_seq_rm(model.memory, 0, -1, -1)
    ids = (llama_cpp.llama_token * len(tokens))(*tokens)
    assert llama_cpp.llama_decode(model.ctx, llama_cpp.llama_batch_get_one(ids, len(ids))) == 0
    return Slot(seq_id=0, cached=list(tokens))


def saved_names(folder: Path) -> set[str]:
    return {p.name for p in folder.glob("*.kv")}


def name_of(model: LlamaModel, tokens: Sequence[int]) -> str:
    return f"{state_name(model_key(model), tokens).hex()}.kv"


def test_a_save_returns_while_the_folder_s_listing_is_held_up(
    model: LlamaModel, folder: Path
) -> None:
    cache = PromptCache(model, PromptStore(folder, budget=1 << 30), model_key(model),
                        min_tokens=MIN_TOKENS)  # fmt: skip
    tokens = prompt(0)
    slot = evaluated(model, tokens)
    pipe = folder / f"{'ab' * 16}.kv"  # another worker's file, its disk held up
    os.mkfifo(pipe)
    saver = threading.Thread(target=cache.after_prompt, args=(slot,))
    saver.start()
    saver.join(WAIT_S)
    returned = not saver.is_alive()
    os.close(open_other_end(pipe))  # the writer thread is the one reading it: end of file
    saver.join()
    cache.close()  # the save in flight reaches the disk
    assert returned, "the save waited for the folder's listing on the decode loop"
    assert saved_names(folder) == {name_of(model, tokens)}  # the pipe: no state, deleted


def test_the_size_budget_still_holds_least_recently_used_first(
    model: LlamaModel, folder: Path
) -> None:
    first = PromptCache(model, PromptStore(folder, budget=1 << 30), model_key(model),
                        min_tokens=MIN_TOKENS)  # fmt: skip
    first.save_all([evaluated(model, prompt(1))])
    first.close()
    [one] = folder.glob("*.kv")
    budget = int(one.stat().st_size * 2.5)  # room for two states of this size
    store = PromptStore(folder, budget=budget)
    cache = PromptCache(model, store, model_key(model), min_tokens=MIN_TOKENS)
    for seed in (2, 3, 4):
        cache.save_all([evaluated(model, prompt(seed))])
    cache.close()
    assert saved_names(folder) == {name_of(model, prompt(3)), name_of(model, prompt(4))}
    assert sum(p.stat().st_size for p in folder.glob("*.kv")) <= budget
    assert store.size_bytes <= budget


@pytest.mark.parametrize("seen", [True, False], ids=["known", "found-by-the-writer"])
def test_a_state_the_disk_has_is_not_saved_again_but_marked_used(
    model: LlamaModel, folder: Path, seen: bool
) -> None:
    """Known to this process (a lookup has seen the folder) or not yet, a state already
    on disk is not written again, and its file moves up the LRU order."""
    key = model_key(model)
    first = PromptCache(model, PromptStore(folder, budget=1 << 30), key, min_tokens=MIN_TOKENS)
    slot = evaluated(model, prompt(5))
    first.save_all([slot])
    first.close()
    [path] = folder.glob("*.kv")
    old = path.stat().st_mtime_ns - 10**9
    os.utime(path, ns=(old, old))
    store = PromptStore(folder, budget=1 << 30)  # the model loaded again
    if seen:  # as a request's lookup of its prompt does, before it runs
        assert store.find(block_chain(key, slot.cached)) is not None
    again = PromptCache(model, store, key, min_tokens=MIN_TOKENS)
    again.after_prompt(slot)
    again.close()
    assert [p.name for p in folder.glob("*.kv")] == [path.name]
    assert path.stat().st_mtime_ns > old  # its place in the LRU order was refreshed
