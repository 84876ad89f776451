"""A packaged app has no Python interpreter: ``sys.executable`` is the app's own stub.

The stub is simulated by a small launcher named like an app ("Hearth") that runs
``hearth.__main__.main`` with its arguments, as Briefcase's stub does. Starting the
worker and the quantizer must go through it, with no ``-m`` and no ``python``.
"""

from __future__ import annotations

import asyncio
import stat
import sys

import httpx
import pytest

from hearth.chats.doc_job import DocumentReader
from hearth.config.launch import is_packaged, relaunch_prefix
from hearth.library.quantize_job import JobState, QuantizeJob
from hearth.supervisor import LoadOptions, Supervisor, WorkerState

STUB = """#!/bin/sh
exec "{python}" -c 'import sys
sys.executable = sys.argv[1]
from hearth.__main__ import main
raise SystemExit(main(sys.argv[2:]))' "$0" "$@"
"""


@pytest.fixture
def app_stub(tmp_path, monkeypatch):
    stub = tmp_path / "Hearth.app-stub" / "Hearth"
    stub.parent.mkdir()
    stub.write_text(STUB.format(python=sys.executable))
    stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(sys, "executable", str(stub))
    monkeypatch.delenv("HEARTH_PACKAGED", raising=False)
    return stub


def test_the_stub_counts_as_packaged(app_stub):
    assert is_packaged()
    assert relaunch_prefix() == [str(app_stub)]


def test_worker_starts_through_the_stub(app_stub, tiny_model_q8, tmp_path):
    async def scenario() -> tuple[str, list[str], int]:
        supervisor = Supervisor(log_dir=tmp_path / "logs")
        try:
            model = await supervisor.start(tiny_model_q8, LoadOptions(n_ctx=256, n_parallel=1))
            assert supervisor.status.state is WorkerState.READY
            cmdline = supervisor.process.command if supervisor.process else []
            status = await asyncio.to_thread(
                httpx.get, f"{supervisor.client.base_url}/health", timeout=10
            )
            return model, list(cmdline), status.status_code
        finally:
            await supervisor.stop()

    model, cmdline, health = asyncio.run(asyncio.wait_for(scenario(), 120))
    assert model == "hearth-tiny-Q8_0"
    assert cmdline[:2] == [str(app_stub), "--worker"]
    assert "-m" not in cmdline
    assert health == 200


def test_quantizer_starts_through_the_stub(app_stub, tiny_model_f16, tmp_path):
    out = tmp_path / "q8.gguf"
    job = QuantizeJob(tiny_model_f16, out, "Q8_0")
    assert job.command[:2] == [str(app_stub), "--quantize"]
    job.start()
    assert job.wait(120)
    assert job.state is JobState.DONE, job.stderr_tail()
    assert out.stat().st_size > 0


def test_document_reader_starts_through_the_stub(app_stub, tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nThe key is under the pot.\n")
    reader = DocumentReader(notes)
    assert reader.command[:2] == [str(app_stub), "--read-document"]
    assert "-m" not in reader.command
    document = reader.read()
    assert "The key is under the pot." in document.text
