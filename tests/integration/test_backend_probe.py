"""The GUI learns llama.cpp's build from a child process and never loads llama.cpp."""

from __future__ import annotations

import os
import subprocess
import sys

from hearth.supervisor.backend_probe import BackendProbe, BackendReport, query_backend


def test_child_process_reports_the_build():
    report = query_backend()
    assert report.error is None
    assert "CPU" in report.system_info
    assert report.gpu_offload is False  # this machine's build is CPU-only


def test_probe_asks_once():
    calls: list[int] = []

    def query() -> BackendReport:
        calls.append(1)
        return BackendReport("CPU : AVX2 = 1", False)

    probe = BackendProbe(query)
    assert probe.report() == probe.report()
    assert len(calls) == 1


def test_gui_side_probes_leave_llama_cpp_unloaded(tmp_path):
    script = (
        "import sys\n"
        "from hearth.supervisor.backend_probe import BackendProbe\n"
        "from hearth.ui.welcome.llama_backend import probe_backend\n"
        "from hearth.ui.pages.services import probe_for_fit\n"
        "probe = BackendProbe()\n"
        "info = probe_backend(probe)\n"
        "system = probe_for_fit(probe)\n"
        "assert info.name == 'CPU' and not info.gpu_offload, info\n"
        "assert not system.gpus\n"
        "assert 'llama_cpp' not in sys.modules, 'the GUI side loaded llama.cpp'\n"
    )
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
