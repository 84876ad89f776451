"""The quantize job runs a child, follows its JSON progress and cleans up on cancel.

The child here is a small stand-in script speaking the same JSON-lines protocol as
``hearth --quantize``; the real quantizer is exercised in tests/integration.
"""

from __future__ import annotations

import sys
import textwrap
import threading
from pathlib import Path

import pytest

from hearth.library.quantize_job import JobState, QuantizeJob, default_launcher, part_path

FAKE_CHILD = textwrap.dedent(
    """
    import json, sys, threading
    src, dst, qtype = sys.argv[1:4]
    mode = src
    part = dst + ".part"
    def emit(**event):
        sys.stdout.write(json.dumps(event) + "\\n"); sys.stdout.flush()
    print("llama.cpp noise that is not JSON", flush=True)
    open(part, "wb").write(b"GGUF partial")
    for i in range(1, 5):
        emit(event="progress", fraction=i / 4, tensor=i, tensors=4)
        if mode == "slow":  # stays busy until the job under test cancels it
            threading.Event().wait(30)
    if mode == "fail":
        emit(event="error", message="llama.cpp could not quantize it")
        sys.exit(1)
    if mode == "crash":
        sys.stderr.write("Segmentation fault\\n"); sys.exit(139)
    import os; os.replace(part, dst)
    emit(event="done", path=dst, size=os.path.getsize(dst))
    """
)
LAUNCHER = [sys.executable, "-c", FAKE_CHILD]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def job(work: Path, mode: str, **kwargs: object) -> QuantizeJob:
    return QuantizeJob(
        Path(mode), work / "out.gguf", "Q4_K_M", launcher=LAUNCHER, pass_flag=False, **kwargs
    )  # type: ignore[arg-type]


def test_default_command_reruns_hearth() -> None:
    assert default_launcher() == [sys.executable, "-m", "hearth"]
    j = QuantizeJob(Path("a.gguf"), Path("b.gguf"), "Q8_0", threads=2)
    assert j.command == [
        sys.executable,
        "-m",
        "hearth",
        "--quantize",
        "a.gguf",
        "b.gguf",
        "Q8_0",
        "--threads",
        "2",
    ]


def test_success_reports_progress_and_output(work: Path) -> None:
    seen: list[float] = []
    done = threading.Event()
    j = job(work, "ok", on_progress=seen.append, on_done=lambda _j: done.set())
    j.start()
    assert j.wait(30) and done.is_set()
    assert j.state is JobState.DONE and j.error is None
    assert j.output == work / "out.gguf" and j.output.read_bytes() == b"GGUF partial"
    assert seen == sorted(seen) and seen[0] == 0.25 and seen[-1] == j.fraction == 1.0
    assert not part_path(work / "out.gguf").exists()


@pytest.mark.parametrize(
    ("mode", "message"),
    [("fail", "could not quantize"), ("crash", "exit status 139")],
)
def test_failure_keeps_the_message_and_removes_the_part(
    work: Path, mode: str, message: str
) -> None:
    j = job(work, mode)
    j.start()
    assert j.wait(30)
    assert j.state is JobState.FAILED and message in (j.error or "")
    assert list(work.iterdir()) == []


def test_cancel_stops_the_child_and_leaves_no_files(work: Path) -> None:
    started = threading.Event()
    j = job(work, "slow", on_progress=lambda _f: started.set())
    j.start()
    assert started.wait(30)
    assert part_path(work / "out.gguf").exists()
    j.cancel()
    assert j.state is JobState.CANCELLED and j.wait(0)
    assert list(work.iterdir()) == []
    j.cancel()  # again: no-op


def test_cancel_before_start(work: Path) -> None:
    j = job(work, "ok")
    j.cancel()
    assert j.state is JobState.CANCELLED and j.wait(0)
