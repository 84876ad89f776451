"""The download manager against the fake Hub: real HTTP, real files, real processes.

huggingface_hub runs unchanged for metadata; the bytes come through our ranged GETs,
redirected to the fake "CDN" as the real Hub does for LFS files. This module covers
integrity and resilience; test_hub_download_control.py covers the user's controls.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from fake_hub import FakeHub, deterministic_blob
from hearth.hub import (
    ChecksumMismatchError,
    DownloadEvent,
    DownloadState,
    HubUnavailableError,
    UnsafePathError,
)
from hearth.hub.sidecar import part_path, read_sidecar
from hub_testing import (
    BIG,
    FAST_RETRY,
    MID,
    REPO,
    RUNNER,
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


# ------------------------------------------------------------------------------ basics


def test_download_is_verified_placed_and_reported(
    hub: FakeHub, models: Path, blobs: dict[str, bytes]
) -> None:
    hub.valid_tokens.add("hf_user")
    events: list[tuple[float, DownloadEvent]] = []

    async def scenario() -> Path:
        manager = manager_for(
            models,
            token_provider=lambda: "hf_user",
            on_event=lambda e: events.append((time.monotonic(), e)),
            bandwidth_limit=8_000_000,
        )
        try:
            return await manager.pull(REPO, BIG)
        finally:
            await manager.aclose()

    path = run(scenario())
    assert path == dest_of(models, BIG) and sha(path.read_bytes()) == sha(blobs[BIG])
    assert no_partial_state(path)
    states = [e.state for _, e in events]
    assert states[:2] == [DownloadState.QUEUED, DownloadState.RUNNING]
    assert states[-2:] == [DownloadState.VERIFYING, DownloadState.COMPLETED]
    progress = [(t, e) for t, e in events if e.state == DownloadState.RUNNING and e.bytes_done]
    span = progress[-1][0] - progress[0][0]
    assert len(progress) <= span * 10 + 3  # throttled to about 10 events a second
    assert progress[-1][1].bytes_done == len(blobs[BIG]) and progress[-1][1].total == len(
        blobs[BIG]
    )
    middle = progress[len(progress) // 2][1]
    assert middle.speed_bps > 0 and middle.eta_s is not None and middle.eta_s > 0
    # The token went to the Hub, never to the CDN the Hub redirected to.
    resolve = [r for r in hub.requests if "/resolve/" in r.path and r.method == "GET"]
    assert resolve and all(r.headers.get("authorization") == "Bearer hf_user" for r in resolve)
    cdn = hub.file_gets(REPO, BIG)
    assert cdn and all("authorization" not in r.headers for r in cdn)


def test_unsafe_names_are_refused_before_anything_happens(hub: FakeHub, models: Path) -> None:
    async def scenario() -> None:
        manager = manager_for(models)
        with pytest.raises(UnsafePathError):
            manager.add(REPO, "../../outside.gguf")
        with pytest.raises(UnsafePathError):
            manager.add("../etc", "x.gguf")
        await manager.aclose()

    run(scenario())
    assert not models.exists() and hub.requests == []


# ------------------------------------------------------------------------------ resume


def test_kill_9_at_half_resumes_from_the_same_byte(
    hub: FakeHub, models: Path, blobs: dict[str, bytes]
) -> None:
    hub.throttle_bps = 3_000_000  # ~2.7 s for 8 MB, so we can catch it in the middle
    dest = dest_of(models, BIG)
    env = {**os.environ, "HF_ENDPOINT": hub.url}
    cmd = [sys.executable, str(RUNNER), "--endpoint", hub.url, "--models", str(models)]
    proc = subprocess.Popen(
        [*cmd, "--repo", REPO, "--file", BIG], env=env, stdout=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30
        while not (part_path(dest).exists() and part_path(dest).stat().st_size >= 4_000_000):
            assert proc.poll() is None, "the runner ended early"
            assert time.monotonic() < deadline
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    have = part_path(dest).stat().st_size
    assert 3_500_000 <= have < len(blobs[BIG]) and not dest.exists()
    assert read_sidecar(dest) is not None  # the state survived the kill
    hub.throttle_bps = None
    gets_before = len(hub.file_gets(REPO, BIG))

    async def restart() -> Path:  # a fresh process-level start: rediscover and resume
        manager = manager_for(models)
        try:
            restored = manager.restore()
            assert [h.dest for h in restored] == [dest]
            return await restored[0].wait()
        finally:
            await manager.aclose()

    path = run(restart())
    assert sha(path.read_bytes()) == sha(blobs[BIG]) and no_partial_state(dest)
    resumed = hub.file_gets(REPO, BIG)[gets_before:]
    assert [r.headers.get("range") for r in resumed] == [f"bytes={have}-"]


def test_dropped_connections_are_retried_and_resumed(
    hub: FakeHub, models: Path, blobs: dict[str, bytes]
) -> None:
    hub.drop_after(REPO, MID, 1_000_000, 1_500_000)  # the first two bodies break midway
    events: list[DownloadEvent] = []

    path = run(pull_once(models, REPO, MID, on_event=events.append))
    assert sha(path.read_bytes()) == sha(blobs[MID])
    starts = [r.range_start for r in hub.file_gets(REPO, MID)]
    assert len(starts) == 3 and starts[0] is None
    assert 900_000 <= starts[1] <= 1_000_000  # whole 64 KiB chunks received were kept
    assert starts[1] + 1_400_000 <= starts[2] <= starts[1] + 1_500_000
    assert sum(e.state == DownloadState.RETRYING for e in events) == 2


def test_stalled_transfer_times_out_and_resumes(
    hub: FakeHub, models: Path, blobs: dict[str, bytes]
) -> None:
    """The "stuck at 99%" case: the connection stays open but no byte comes."""
    hub.drop_after(REPO, MID, 3_900_000)
    hub.stall_s = 3.0

    start = time.monotonic()
    path = run(pull_once(models, REPO, MID, timeout=httpx.Timeout(5.0, read=0.3)))
    assert time.monotonic() - start < 2.5  # gave up on the silent connection, not waited
    assert sha(path.read_bytes()) == sha(blobs[MID])
    starts = [r.range_start for r in hub.file_gets(REPO, MID)]
    assert len(starts) == 2 and starts[1] is not None and starts[1] > 3_000_000


def test_server_ignoring_range_restarts_cleanly(
    hub: FakeHub, models: Path, blobs: dict[str, bytes]
) -> None:
    hub.drop_after(REPO, MID, 1_500_000)
    hub.ignore_range = True  # the retry gets 200 and the whole body again

    path = run(pull_once(models, REPO, MID))
    assert sha(path.read_bytes()) == sha(blobs[MID])
    starts = [r.range_start for r in hub.file_gets(REPO, MID)]
    assert starts[0] is None and starts[1] is not None and starts[1] > 0  # asked, got 200


def test_server_errors_are_retried_with_backoff(
    hub: FakeHub, models: Path, blobs: dict[str, bytes]
) -> None:
    hub.fail_next(REPO, SMALL, 503, 502)

    start = time.monotonic()
    path = run(pull_once(models, REPO, SMALL))
    assert sha(path.read_bytes()) == sha(blobs[SMALL])
    assert time.monotonic() - start >= 0.05 + 0.1  # two backoff waits happened


def test_unreachable_hub_is_a_clear_error(models: Path) -> None:
    with socket.socket() as sock:  # a port that nobody listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    events: list[DownloadEvent] = []

    async def scenario() -> None:
        manager = manager_for(models, endpoint=dead, on_event=events.append)
        try:
            with pytest.raises(HubUnavailableError) as err:
                await manager.pull(REPO, MID)
            assert "Could not reach the Hugging Face Hub" in err.value.message
        finally:
            await manager.aclose()

    run(scenario())
    assert sum(e.state == DownloadState.RETRYING for e in events) == FAST_RETRY.max_attempts
    assert not models.exists()


def test_changed_file_on_the_hub_restarts_from_zero(
    hub: FakeHub, models: Path, blobs: dict[str, bytes]
) -> None:
    hub.throttle_bps = 4_000_000
    dest = dest_of(models, MID)
    new_content = deterministic_blob(3_000_000, 99)

    async def scenario() -> Path:
        manager = manager_for(models)
        try:
            handle = manager.add(REPO, MID)
            await until(lambda: handle.bytes_done >= 1_000_000)
            manager.pause(handle.id)
            await until(lambda: handle.state == DownloadState.PAUSED)
            assert part_path(dest).stat().st_size > 0
            hub.update_file(REPO, MID, new_content)  # a new commit replaces the file
            hub.throttle_bps = None
            manager.resume(handle.id)
            return await handle.wait()
        finally:
            await manager.aclose()

    path = run(scenario())
    assert path.read_bytes() == new_content
    last = hub.file_gets(REPO, MID)[-1]
    assert last.range_start is None  # etag changed: no Range, started over
    assert read_sidecar(dest) is None


# ------------------------------------------------------------------------------ integrity


def test_flipped_byte_is_detected_and_never_installed(
    hub: FakeHub, models: Path, blobs: dict[str, bytes]
) -> None:
    hub.corrupt(REPO, MID, offset=2_345_678)
    events: list[DownloadEvent] = []

    async def scenario() -> None:
        manager = manager_for(models, on_event=events.append)
        try:
            with pytest.raises(ChecksumMismatchError) as err:
                await manager.pull(REPO, MID)
            assert sha(blobs[MID]) in err.value.message and "deleted" in err.value.message
        finally:
            await manager.aclose()

    run(scenario())
    dest = dest_of(models, MID)
    assert not dest.exists() and no_partial_state(dest)
    assert list(dest.parent.iterdir()) == []
    assert events[-1].state == DownloadState.FAILED
    assert events[-1].error_code == "checksum_mismatch"
