"""Shared pieces of the download tests: the fake Hub with its blobs, and helpers.

Test modules import the fixtures by name (``from hub_testing import hub, ...``).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import keyring
import pytest

from fake_hub import FakeHub, deterministic_blob
from hearth.hub import DownloadManager, RetryPolicy
from hearth.hub.sidecar import part_path, sidecar_path
from keyring_backends.file_keyring import AltPlaintextKeyring

T = TypeVar("T")
REPO = "hearth-test/blobs-GGUF"
BIG = "big-Q8_0.gguf"  # 8 MB
MID = "mid-Q4_K_M.gguf"  # 4 MB
SMALL = "small-Q4_0.gguf"  # 1 MB
RUNNER = Path(__file__).parent / "hub_runner.py"
FAST_RETRY = RetryPolicy(max_attempts=4, base_delay=0.05, max_delay=0.2)


@pytest.fixture(autouse=True)
def isolated_hf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No real token or keyring: a plain-text file keyring under tmp_path (reported as
    the file it is, as keyrings.alt's would be)."""
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    ring = AltPlaintextKeyring(tmp_path / "keyring.json")
    previous = keyring.get_keyring()
    keyring.set_keyring(ring)
    yield
    keyring.set_keyring(previous)


@pytest.fixture(scope="module")
def blobs() -> dict[str, bytes]:
    return {
        BIG: deterministic_blob(8_000_000, 1),
        MID: deterministic_blob(4_000_000, 2),
        SMALL: deterministic_blob(1_000_000, 3),
    }


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, blobs: dict[str, bytes]) -> Iterator[FakeHub]:
    with FakeHub() as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        fake.add_repo(REPO, dict(blobs))
        fake.add_repo("corp/gated-GGUF", {"g-Q4_0.gguf": blobs[SMALL]}, gated="manual")
        yield fake


@pytest.fixture
def models(tmp_path: Path) -> Path:
    return tmp_path / "models"


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def manager_for(models: Path, **kw: Any) -> DownloadManager:
    kw.setdefault("token_provider", lambda: None)
    kw.setdefault("retry", FAST_RETRY)
    kw.setdefault("reserve_bytes", 0)
    return DownloadManager(models, **kw)


async def pull_once(models: Path, repo: str, name: str, **kw: Any) -> Path:
    """Pull one file with a fresh manager, closed afterwards (a new app run)."""
    manager = manager_for(models, **kw)
    try:
        return await manager.pull(repo, name)
    finally:
        await manager.aclose()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def dest_of(models: Path, name: str, repo: str = REPO) -> Path:
    return models.joinpath(*repo.split("/"), name)


async def until(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.005)


def no_partial_state(dest: Path) -> bool:
    return not part_path(dest).exists() and not sidecar_path(dest).exists()
