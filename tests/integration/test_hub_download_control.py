"""The user's controls over downloads: bandwidth cap, pause / resume / cancel, the
concurrency limit, restore after a restart, one writer per file, gated repos."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from fake_hub import FakeHub, deterministic_blob
from hearth.config.secrets import set_hf_token
from hearth.hub import (
    DownloadCancelledError,
    DownloadError,
    DownloadEvent,
    DownloadState,
    GatedRepoAccessError,
)
from hearth.hub.client import keyring_token
from hearth.hub.sidecar import part_path, read_sidecar
from hub_testing import (
    BIG,
    MID,
    REPO,
    SMALL,
    blobs,
    dest_of,
    hub,
    isolated_hf,
    manager_for,
    models,
    no_partial_state,
    pull_once,
    run,
    sha,
    until,
)

__all__ = ["blobs", "hub", "isolated_hf", "models"]  # fixtures: pytest finds them by name


def test_bandwidth_cap_holds_within_ten_percent(hub: FakeHub, models: Path) -> None:
    hub.add_repo("hearth-test/cap-GGUF", {"cap-Q8_0.gguf": deterministic_blob(12_000_000, 7)})
    cap = 4_000_000
    samples: list[tuple[float, int]] = []

    def on_event(event: DownloadEvent) -> None:
        if event.state == DownloadState.RUNNING and event.bytes_done:
            samples.append((time.monotonic(), event.bytes_done))

    async def scenario() -> None:
        manager = manager_for(models, bandwidth_limit=cap, on_event=on_event)
        try:
            await manager.pull("hearth-test/cap-GGUF", "cap-Q8_0.gguf")
        finally:
            await manager.aclose()

    run(scenario())
    (t0, b0), (t1, b1) = samples[0], samples[-1]
    assert b1 == 12_000_000
    rate = (b1 - b0) / (t1 - t0)
    assert cap * 0.9 <= rate <= cap * 1.1, f"measured {rate:.0f} B/s for a {cap} B/s cap"


def test_pause_resume_and_cancel(hub: FakeHub, models: Path, blobs: dict[str, bytes]) -> None:
    hub.throttle_bps = 4_000_000
    dest_big, dest_mid = dest_of(models, BIG), dest_of(models, MID)

    async def scenario() -> None:
        manager = manager_for(models, max_concurrent=2)
        try:
            big = manager.add(REPO, BIG)
            mid = manager.add(REPO, MID)
            await until(lambda: big.bytes_done >= 1_000_000 and mid.bytes_done >= 500_000)
            manager.pause(big.id)
            manager.cancel(mid.id)
            await until(lambda: big.state == DownloadState.PAUSED)
            with pytest.raises(DownloadCancelledError):
                await mid.wait()
            assert mid.state == DownloadState.CANCELLED and no_partial_state(dest_mid)
            paused_at = part_path(dest_big).stat().st_size
            assert paused_at > 0 and read_sidecar(dest_big) is not None
            await asyncio.sleep(0.3)
            assert part_path(dest_big).stat().st_size == paused_at  # really paused
            hub.throttle_bps = None
            manager.resume(big.id)
            path = await big.wait()
            assert sha(path.read_bytes()) == sha(blobs[BIG])
            assert hub.file_gets(REPO, BIG)[-1].range_start == paused_at
        finally:
            await manager.aclose()

    run(scenario())
    assert not dest_mid.exists() and no_partial_state(dest_big)


def test_commands_before_start_and_restore_as_paused(
    hub: FakeHub, models: Path, blobs: dict[str, bytes]
) -> None:
    async def first_session() -> None:
        manager = manager_for(models, max_concurrent=1)
        try:
            small = manager.add(REPO, SMALL)
            manager.pause(small.id)  # before its task even ran
            mid = manager.add(REPO, MID)
            manager.cancel(mid.id)  # still queued
            await until(lambda: small.state == DownloadState.PAUSED)
            assert mid.state == DownloadState.CANCELLED
            hub.throttle_bps = 2_000_000
            big = manager.add(REPO, BIG)
            await until(lambda: big.bytes_done >= 1_500_000)
        finally:
            await manager.aclose()  # quitting keeps the partial BIG for next time

    run(first_session())
    assert hub.file_gets(REPO, SMALL) == [] and hub.file_gets(REPO, MID) == []
    have = part_path(dest_of(models, BIG)).stat().st_size
    hub.throttle_bps = None
    seen = len(hub.requests)

    async def second_session() -> Path:
        manager = manager_for(models)
        try:
            (big,) = manager.restore(start=False)
            await asyncio.sleep(0.05)
            assert big.state == DownloadState.PAUSED and len(hub.requests) == seen
            manager.resume(big.id)
            return await big.wait()
        finally:
            await manager.aclose()

    path = run(second_session())
    assert sha(path.read_bytes()) == sha(blobs[BIG])
    assert hub.file_gets(REPO, BIG)[-1].range_start == have


def test_concurrency_limit_runs_downloads_one_after_the_other(
    hub: FakeHub, models: Path, blobs: dict[str, bytes]
) -> None:
    log: list[tuple[str, DownloadState]] = []

    async def scenario() -> None:
        manager = manager_for(
            models,
            max_concurrent=1,
            bandwidth_limit=10_000_000,
            on_event=lambda e: log.append((e.filename, e.state)),
        )
        try:
            first = manager.add(REPO, MID)
            second = manager.add(REPO, SMALL)
            await until(lambda: first.state.active)
            assert second.state == DownloadState.QUEUED
            await asyncio.gather(first.wait(), second.wait())
        finally:
            await manager.aclose()

    run(scenario())
    assert log.index((SMALL, DownloadState.RUNNING)) > log.index((MID, DownloadState.COMPLETED))
    gets = [r for r in hub.requests if r.method == "GET" and r.path.startswith("/lfs/")]
    order = [hub.repos[REPO].files[MID].sha256 in r.path for r in gets]
    assert order == sorted(order, reverse=True)  # every MID byte request before SMALL's


def test_two_processes_never_write_the_same_part(hub: FakeHub, models: Path) -> None:
    hub.throttle_bps = 4_000_000

    async def scenario() -> None:
        first, second = manager_for(models), manager_for(models)
        try:
            running = first.add(REPO, MID)
            await until(lambda: running.bytes_done > 0)
            with pytest.raises(DownloadError) as err:
                await second.pull(REPO, MID)
            assert "already being downloaded by another Hearth process" in err.value.message
            first.pause(running.id)
            await until(lambda: running.state == DownloadState.PAUSED)
            hub.throttle_bps = None
            await second.pull(REPO, MID)  # the lock is free once the first one paused
        finally:
            await first.aclose()
            await second.aclose()

    run(scenario())
    assert dest_of(models, MID).exists()


# ------------------------------------------------------------------------------ access


def test_gated_repo_gives_exact_guidance(
    hub: FakeHub, models: Path, blobs: dict[str, bytes]
) -> None:
    repo = "corp/gated-GGUF"

    with pytest.raises(GatedRepoAccessError) as no_token:
        run(pull_once(models, repo, "g-Q4_0.gguf", token_provider=keyring_token))
    assert "Add a Hugging Face token" in no_token.value.message
    assert f"accept the licence at {hub.url}/{repo}" in no_token.value.message
    assert no_token.value.status == 401

    hub.valid_tokens.add("hf_member")
    set_hf_token("hf_member")  # read back from the (file) keyring by the manager
    with pytest.raises(GatedRepoAccessError) as not_granted:
        run(pull_once(models, repo, "g-Q4_0.gguf", token_provider=keyring_token))
    assert f"Accept the licence at {hub.url}/{repo}" in not_granted.value.message
    assert not_granted.value.status == 403

    hub.repos[repo].granted.add("hf_member")
    path = run(pull_once(models, repo, "g-Q4_0.gguf", token_provider=keyring_token))
    assert sha(path.read_bytes()) == sha(blobs[SMALL])
    assert not any(p.suffix in (".part", ".json") for p in models.rglob("*"))
