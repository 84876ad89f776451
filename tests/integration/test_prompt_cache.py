"""The prompt cache on disk, through real ``hearth serve`` processes sharing a folder.

A long prompt's KV state is saved as the server evaluates it (and as it stops); a new
server on the same folder restores it for a prompt that extends it, counts the restored
tokens as cached (``timings.cache_disk_tokens`` says they came from disk) and answers
exactly as a server without a cache does.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from hearth.engine.prompt_store import SUFFIX, verify
from hearth.library.library import Library
from server_process import ServeProcess, start_serve

CTX = 2048
MODEL = "hearth-tiny-F16"
WORDS = ["the", "cat", "sat", "on", "mat", "and", "dog", "ran", "far", "away", "from",
         "home", "while", "birds", "sang", "in", "trees", "near", "river", "bank"]  # fmt: skip


def long_text(seed: int, n_words: int = 420) -> str:
    """About ``n_words`` tokens of plain words for the tiny model's vocabulary."""
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


PROMPT = long_text(1)
FOLLOW_UP = PROMPT + " and now the question: where did the dog go"


def serve(model: Path, logs: Path, cache: Path | str, *extra: str) -> ServeProcess:
    return start_serve(
        model, logs, "--prompt-cache", str(cache), *extra, ctx=CTX, parallel=1
    )


def complete(server: ServeProcess, prompt: str, max_tokens: int = 16) -> dict[str, Any]:
    client = openai.OpenAI(base_url=f"{server.base_url}/v1", api_key="none", max_retries=0)
    response = client.completions.create(
        model=MODEL, prompt=prompt, max_tokens=max_tokens, temperature=0
    )
    return response.model_dump()


def disk_tokens(body: dict[str, Any]) -> int:
    return int(body["timings"]["cache_disk_tokens"])


def cached_tokens(body: dict[str, Any]) -> int:
    return int(body["usage"]["prompt_tokens_details"]["cached_tokens"])


def cache_files(folder: Path) -> list[Path]:
    return sorted(folder.glob(f"*{SUFFIX}"))


@pytest.fixture(scope="module")
def reference(tiny_model_f16: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The follow-up's greedy reply from a server without a prompt cache."""
    logs = tmp_path_factory.mktemp("reference")
    server = serve(tiny_model_f16, logs, "off")
    try:
        body = complete(server, FOLLOW_UP)
        assert cached_tokens(body) == 0
        return str(body["choices"][0]["text"])
    finally:
        server.stop()


def test_a_restarted_server_restores_the_prompt_from_disk_and_answers_the_same(
    tiny_model_f16: Path, tmp_path: Path, reference: str
) -> None:
    folder = tmp_path / "prompt-cache"
    first = serve(tiny_model_f16, tmp_path, folder, "--prompt-cache-min-tokens", "512")
    try:
        body = complete(first, PROMPT)
        n_prompt = body["usage"]["prompt_tokens"]
        assert n_prompt >= 1024 and disk_tokens(body) == 0
    finally:
        first.stop()  # the writer finishes before the process exits
    assert cache_files(folder), first.log_text()

    second = serve(tiny_model_f16, tmp_path, folder, "--prompt-cache-min-tokens", "512")
    try:
        body = complete(second, FOLLOW_UP)
        assert body["choices"][0]["text"] == reference
        assert disk_tokens(body) == cached_tokens(body)
        assert n_prompt - 256 < disk_tokens(body) <= n_prompt
        status = httpx.get(f"{second.base_url}/hearth/v1/status", timeout=10).json()
        on_disk = sum(path.stat().st_size for path in cache_files(folder))
        assert status["prompt_cache"]["size_bytes"] == on_disk  # `hearth ps` shows it
        assert status["prompt_cache"]["saving"] is True
    finally:
        second.stop()
    assert "restored" in second.log_text()


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _corrupt(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1000] ^= 0x5A
    path.write_bytes(bytes(data))


def _foreign(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[12:28] = bytes(16)  # the model key of another model
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_truncate, _corrupt, _foreign])
def test_a_damaged_cache_file_is_a_miss_that_is_deleted(
    tiny_model_f16: Path, tmp_path: Path, reference: str, damage: object
) -> None:
    folder = tmp_path / "prompt-cache"
    first = serve(tiny_model_f16, tmp_path, folder, "--prompt-cache-min-tokens", "512")
    try:
        complete(first, PROMPT)
    finally:
        first.stop()
    (saved,) = cache_files(folder)
    assert callable(damage)
    damage(saved)
    # This server saves nothing of its own, so the folder shows what it did to the file.
    second = serve(tiny_model_f16, tmp_path, folder, "--prompt-cache-min-tokens", "100000")
    try:
        body = complete(second, FOLLOW_UP)
        assert body["choices"][0]["text"] == reference
        assert cached_tokens(body) == 0 and disk_tokens(body) == 0
    finally:
        second.stop()
    assert not saved.exists()
    assert "deleted" in second.log_text()


def test_two_servers_share_one_folder_without_corrupting_it(
    tiny_model_f16: Path, tmp_path: Path
) -> None:
    """Each server alternates between prompts, so with one slot every switch restores
    from the folder, including states the other server wrote."""
    folder = tmp_path / "prompt-cache"
    prompts = [long_text(seed, 220) for seed in (11, 12, 13)]
    servers = [
        serve(tiny_model_f16, tmp_path, folder, "--prompt-cache-min-tokens", "256")
        for _ in range(2)
    ]
    replies: dict[tuple[int, int], list[str]] = {}
    restored: list[int] = []
    failures: list[BaseException] = []

    def run(index: int) -> None:
        try:
            for round_ in range(2):
                for p in range(len(prompts)):
                    body = complete(servers[index], prompts[p] + f" round {round_}", 8)
                    replies.setdefault((index, p), []).append(body["choices"][0]["text"])
                    restored.append(disk_tokens(body))
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for server in servers:
            server.stop()
    assert not failures, failures
    assert sum(1 for n in restored if n > 0) >= 2  # switches found states on disk
    for p in range(len(prompts)):  # greedy: the same prompt, the same reply, anywhere
        assert replies[(0, p)][0] == replies[(1, p)][0]
    files = cache_files(folder)
    assert files
    assert [verify(path) for path in files] == [None] * len(files)
    assert not list(folder.glob("*.tmp"))


def test_an_unwritable_folder_turns_saving_off_with_one_log_line(
    tiny_model_f16: Path, tmp_path: Path, unwritable_folder: Path
) -> None:
    server = serve(
        tiny_model_f16, tmp_path, unwritable_folder, "--prompt-cache-min-tokens", "256",
        "--prompt-cache-max", "1",
    )  # fmt: skip
    try:
        for seed in (21, 22):
            body = complete(server, long_text(seed, 220), 4)
            assert body["usage"]["completion_tokens"] == 4
    finally:
        server.stop()
    assert server.log_text().count("saving is off") == 1


def test_an_evicted_model_comes_back_with_its_prompt_from_disk(
    tiny_model_f16: Path, tiny_model_q8: Path, tmp_path: Path, reference: str
) -> None:
    """With room for one model, another evicts it; when it is asked for again, the long
    prompt it had evaluated is restored from disk, and the answer is the same."""
    library = Library()
    library.import_in_place(tiny_model_f16)
    library.import_in_place(tiny_model_q8)
    folder = tmp_path / "prompt-cache"
    server = start_serve(None, tmp_path, "--prompt-cache", str(folder), "--max-models", "1",
                         "--prompt-cache-min-tokens", "512", ctx=CTX, parallel=1)  # fmt: skip
    try:
        first = complete(server, PROMPT)
        assert disk_tokens(first) == 0
        client = openai.OpenAI(base_url=f"{server.base_url}/v1", api_key="none", max_retries=0)
        other = client.completions.create(model="hearth-tiny-Q8_0", prompt="x", max_tokens=2)
        assert other.model == "hearth-tiny-Q8_0"
        assert f"evicting {MODEL}" in server.log_text()
        back = complete(server, FOLLOW_UP)
        assert back["choices"][0]["text"] == reference
        assert disk_tokens(back) > 512 and disk_tokens(back) == cached_tokens(back)
    finally:
        server.stop()
