"""Runtime records: what ``hearth ps`` and ``hearth run`` read to find workers."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

from hearth.config.runtime import WorkerRecord, now, register, running, unregister


def test_a_record_is_private_and_listed_while_its_process_lives(tmp_path):
    record = WorkerRecord(os.getpid(), "127.0.0.1", 8677, "app", now(), token="secret")
    path = register(record, tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert running(tmp_path) == [record]
    unregister(record.pid, tmp_path)
    assert running(tmp_path) == []


def test_records_of_dead_processes_are_dropped(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    register(WorkerRecord(child.pid, "127.0.0.1", 1, "serve", now()), tmp_path)
    (tmp_path / "worker-999999.json").write_text("{not json")
    assert running(tmp_path) == []
    assert not (tmp_path / f"worker-{child.pid}.json").exists()


def test_the_app_comes_first(tmp_path):
    serve = WorkerRecord(os.getpid(), "0.0.0.0", 9000, "serve", now())
    app = WorkerRecord(os.getppid(), "127.0.0.1", 8677, "app", now())
    register(serve, tmp_path)
    register(app, tmp_path)
    assert [r.kind for r in running(tmp_path)] == ["app", "serve"]
    assert serve.base_url == "http://127.0.0.1:9000"
