"""A real installer build, checked from the outside (skipped unless one is named).

``HEARTH_BUILT_APP`` names the built app's own executable, e.g.
``build/hearth/debian/bookworm/hearth-0.1.0/usr/bin/hearth`` after
``briefcase build linux system`` (installers/README.md). Its Python, stdlib and
packages are the bundle's, not this venv's: these tests prove the bundle is complete
(CLI verbs, llama.cpp loads) and that the worker and the quantizer start by re-running
that executable, as the packaged GUI does.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from hearth.library.quantize_job import JobState, QuantizeJob
from hearth.supervisor import LoadOptions, Supervisor, WorkerState

BUILT = os.environ.get("HEARTH_BUILT_APP", "")

pytestmark = pytest.mark.skipif(
    not BUILT or not Path(BUILT).is_file(), reason="set HEARTH_BUILT_APP to a built app"
)


@pytest.fixture
def built_app(monkeypatch, tmp_path) -> Path:
    app = Path(BUILT).resolve()
    monkeypatch.setattr(sys, "executable", str(app))
    monkeypatch.setenv("HEARTH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HEARTH_CONFIG_DIR", str(tmp_path / "config"))
    return app


def _run(app: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(app), *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_cli_runs_from_the_bundle(built_app, tmp_path):
    version = _run(built_app, "--version")
    assert version.returncode == 0 and version.stdout.startswith("hearth "), version.stderr
    paths = _run(built_app, "paths", "--json")
    assert paths.returncode == 0, paths.stderr
    assert json.loads(paths.stdout)["models"] == str(tmp_path / "data" / "models")
    listing = _run(built_app, "ls", "--json")
    assert listing.returncode == 0 and json.loads(listing.stdout) == [], listing.stderr


def test_worker_starts_through_the_built_app(built_app, tiny_model_q8, tmp_path):
    async def scenario() -> tuple[list[str], int]:
        supervisor = Supervisor(log_dir=tmp_path / "logs")
        try:
            await supervisor.start(tiny_model_q8, LoadOptions(n_ctx=256, n_parallel=1))
            assert supervisor.status.state is WorkerState.READY
            cmdline = supervisor.process.command if supervisor.process else []
            health = await asyncio.to_thread(
                httpx.get, f"{supervisor.client.base_url}/health", timeout=10
            )
            return list(cmdline), health.status_code
        finally:
            await supervisor.stop()

    cmdline, health = asyncio.run(asyncio.wait_for(scenario(), 180))
    assert cmdline[:2] == [str(built_app), "--worker"]
    assert health == 200
    assert (tmp_path / "logs" / "worker.log").stat().st_size > 0


def test_quantizer_runs_in_the_built_app(built_app, tiny_model_f16, tmp_path):
    out = tmp_path / "q8.gguf"
    job = QuantizeJob(tiny_model_f16, out, "Q8_0")
    assert job.command[:2] == [str(built_app), "--quantize"]
    job.start()
    assert job.wait(180)
    assert job.state is JobState.DONE, job.stderr_tail()
    assert out.stat().st_size > 0
