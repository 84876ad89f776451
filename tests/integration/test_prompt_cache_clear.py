"""Clearing the prompt cache from the app (Settings → Models → Clear) while a real
``hearth serve`` uses the folder: the saved states go, the server keeps answering (a
state that vanished is a miss) and saves again; a clear never runs while another
process holds the folder's eviction lock."""

from __future__ import annotations

import time
from pathlib import Path

import openai
import pytest

from hearth.config.file_lock import try_lock, unlock
from hearth.engine.prompt_store import SUFFIX
from hearth.supervisor.prompt_cache_folder import CacheUsage, clear, usage
from server_process import start_serve

CTX = 2048
MODEL = "hearth-tiny-F16"
WORDS = ["the", "cat", "sat", "on", "mat", "and", "dog", "ran", "far", "away", "from",
         "home", "while", "birds", "sang"]  # fmt: skip


def prompt(seed: int, n_words: int = 420) -> str:
    return " ".join(WORDS[(i * seed + i // 7) % len(WORDS)] for i in range(n_words))


def wait_for_files(folder: Path, timeout: float = 60.0) -> list[Path]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = sorted(folder.glob(f"*{SUFFIX}"))
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"no saved state appeared in {folder}")


@pytest.fixture
def server_and_folder(tiny_model_f16: Path, tmp_path: Path):
    folder = tmp_path / "prompt-cache"
    server = start_serve(
        tiny_model_f16, tmp_path, "--prompt-cache", str(folder),
        "--prompt-cache-min-tokens", "512", ctx=CTX, parallel=1,
    )  # fmt: skip
    try:
        yield server, folder
    finally:
        server.stop()


def test_clear_while_the_server_runs(server_and_folder) -> None:
    server, folder = server_and_folder
    client = openai.OpenAI(base_url=f"{server.base_url}/v1", api_key="none", max_retries=0)
    client.completions.create(model=MODEL, prompt=prompt(3), max_tokens=4, temperature=0)
    saved = wait_for_files(folder)
    before = usage(folder)
    assert before.entries == len(saved) and before.size_bytes > 0

    assert clear(folder) == CacheUsage(0, 0)
    assert not any(p.exists() for p in saved)

    # The server goes on: the same prompt again (its state gone: a miss, recomputed),
    # then it saves a new one into the cleared folder.
    again = client.completions.create(
        model=MODEL, prompt=prompt(3), max_tokens=4, temperature=0
    ).model_dump()
    assert again["timings"]["cache_disk_tokens"] == 0
    client.completions.create(model=MODEL, prompt=prompt(5), max_tokens=4, temperature=0)
    assert wait_for_files(folder)
    assert "Traceback" not in server.log_text()


def test_clear_waits_its_turn_behind_an_eviction_in_progress(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    state = folder / f"{'ab' * 16}{SUFFIX}"
    state.write_bytes(b"x" * 100)
    with (folder / ".evict.lock").open("a+b") as held:
        assert try_lock(held)  # a worker evicting now
        try:
            assert clear(folder) == CacheUsage(100, 1)  # left alone, and said so
        finally:
            unlock(held)
    assert clear(folder) == CacheUsage(0, 0)
    assert not state.exists()
