"""Quantizing with llama.cpp in a child process: real output that loads, progress, cancel.

The child runs ``hearth.engine.quantize.main`` (what ``hearth --quantize`` dispatches
to) with ``python -c``, so these tests do not depend on the argv dispatch.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from hearth.core.model_info import LoadConfig
from hearth.engine.model import LlamaModel
from hearth.engine.quantize import QuantizeError, quantize_model
from hearth.library.gguf_metadata import read_metadata
from hearth.library.quantize_job import JobState, QuantizeJob, part_path

ENTRY = "import sys; from hearth.engine.quantize import main; raise SystemExit(main(sys.argv[1:]))"
# The same entry, slowed to ~0.4 s per tensor so a cancel lands mid-quantization: the
# progress hook runs inside llama.cpp's log callback, on the quantizing thread.
SLOW_ENTRY = (
    "import sys, time; import hearth.engine.quantize as q; emit = q._emit\n"
    "def slow(event):\n"
    "    emit(event)\n"
    "    if event.get('event') == 'progress': time.sleep(0.4)\n"
    "q._emit = slow\n"
    "raise SystemExit(q.main(sys.argv[1:]))"
)


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def run_job(src: Path, dst: Path, qtype: str, entry: str = ENTRY, **kw: object) -> QuantizeJob:
    job = QuantizeJob(
        src, dst, qtype, launcher=[sys.executable, "-c", entry], pass_flag=False, threads=2, **kw
    )  # type: ignore[arg-type]
    job.start()
    return job


@pytest.mark.parametrize("qtype", ["Q4_K_M", "Q8_0"])
def test_quantized_file_loads(tiny_model_f16: Path, out_dir: Path, qtype: str) -> None:
    seen: list[float] = []
    dst = out_dir / f"tiny-{qtype}.gguf"
    job = run_job(tiny_model_f16, dst, qtype, on_progress=seen.append)
    assert job.wait(120), "quantizing took too long"
    assert job.state is JobState.DONE, (job.error, job.stderr_tail())
    assert job.fraction == 1.0 and seen[-1] == 1.0
    assert len(set(seen)) > 5 and seen == sorted(seen)  # per-tensor steps, in order
    assert [p.name for p in out_dir.iterdir()] == [dst.name]  # no .part left

    meta = read_metadata(dst)
    assert meta.quantization == qtype
    assert meta.parameter_count == read_metadata(tiny_model_f16).parameter_count
    assert dst.stat().st_size < tiny_model_f16.stat().st_size * 0.7

    model = LlamaModel(LoadConfig(model_path=dst, n_ctx=256, n_parallel=1))
    try:
        assert model.info("q").n_params == meta.parameter_count
        assert model.tokenize("hello world", add_special=True, parse_special=False)
    finally:
        model.close()


def test_cancel_mid_quantization_leaves_no_files(tiny_model_f16: Path, out_dir: Path) -> None:
    started = threading.Event()
    dst = out_dir / "tiny-Q4_K_M.gguf"
    job = run_job(
        tiny_model_f16,
        dst,
        "Q4_K_M",
        entry=SLOW_ENTRY,
        on_progress=lambda f: started.set() if 0 < f < 1 else None,
    )
    assert started.wait(60), job.stderr_tail()
    assert part_path(dst).exists()  # llama.cpp is writing
    job.cancel()
    assert job.state is JobState.CANCELLED and 0 < job.fraction < 1
    assert list(out_dir.iterdir()) == []


def test_already_quantized_source_is_refused(tiny_model_q8: Path, out_dir: Path) -> None:
    job = run_job(tiny_model_q8, out_dir / "again.gguf", "Q4_K_M")
    assert job.wait(60)
    assert job.state is JobState.FAILED and "already quantized (Q8_0)" in (job.error or "")
    assert list(out_dir.iterdir()) == []


def test_in_process_quantize_reports_every_tensor(tiny_model_f16: Path, out_dir: Path) -> None:
    steps: list[tuple[int, int]] = []
    dst = quantize_model(
        tiny_model_f16, out_dir / "t.gguf", "q4_0", on_progress=lambda i, n: steps.append((i, n))
    )
    n = len(read_metadata(tiny_model_f16).tensors)
    assert steps == [(i, n) for i in range(1, n + 1)]
    assert read_metadata(dst).quantization == "Q4_0"
    with pytest.raises(QuantizeError, match="already exists"):
        quantize_model(tiny_model_f16, dst, "Q4_0")
    with pytest.raises(QuantizeError, match="Unknown quantization"):
        quantize_model(tiny_model_f16, out_dir / "x.gguf", "Q9_X")
    with pytest.raises(QuantizeError, match="truncated"):
        bad = out_dir / "bad.gguf"
        bad.write_bytes(tiny_model_f16.read_bytes()[:5000])
        quantize_model(bad, out_dir / "y.gguf", "Q8_0")
    assert sorted(p.name for p in out_dir.iterdir()) == ["bad.gguf", "t.gguf"]


def test_not_enough_disk_space(
    tiny_model_f16: Path, out_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    usage = shutil.disk_usage(out_dir)
    monkeypatch.setattr(shutil, "disk_usage", lambda _p: usage._replace(free=100_000))
    with pytest.raises(QuantizeError, match="is free in"):
        quantize_model(tiny_model_f16, out_dir / "q.gguf", "Q8_0")
    assert list(out_dir.iterdir()) == []
