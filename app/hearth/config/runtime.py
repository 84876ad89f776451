"""Which Hearth workers run on this machine now, so the CLI can find them.

Every worker (the app's, or ``hearth serve``) writes a small record when it listens and
removes it when it stops: ``hearth ps`` lists them and ``hearth run`` uses the app's
worker instead of loading a second copy of a model. A record may hold the app's
per-launch token, so it is written with mode 600 (like Jupyter's runtime files), and a
record whose process is gone (a crash, ``kill -9``) is skipped and removed by readers.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import psutil

from hearth.config.paths import default_paths

log = logging.getLogger(__name__)

WorkerKind = Literal["app", "serve"]


@dataclass(frozen=True)
class WorkerRecord:
    pid: int
    host: str
    port: int
    kind: WorkerKind
    started: float
    token: str | None = None  # the app's admin token; never a user's API key

    @property
    def base_url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        host = "[::1]" if host == "::" else host
        return f"http://{host}:{self.port}"


def runtime_dir() -> Path:
    return default_paths().data_dir / "run"


def _record_path(pid: int, folder: Path) -> Path:
    return folder / f"worker-{pid}.json"


def register(record: WorkerRecord, folder: Path | None = None) -> Path:
    """Write ``record`` (mode 600) and return its path."""
    folder = folder or runtime_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = _record_path(record.pid, folder)
    temp = path.with_suffix(".tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(asdict(record), handle)
    os.replace(temp, path)
    return path


def unregister(pid: int, folder: Path | None = None) -> None:
    with contextlib.suppress(FileNotFoundError):
        _record_path(pid, folder or runtime_dir()).unlink()


def _alive(record: WorkerRecord) -> bool:
    try:
        process = psutil.Process(record.pid)
        # A recycled pid belongs to a process that started after the record was written.
        return bool(process.create_time() <= record.started + 1.0)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def running(folder: Path | None = None) -> list[WorkerRecord]:
    """The workers whose process is alive, the app's first, then oldest first."""
    folder = folder or runtime_dir()
    records: list[WorkerRecord] = []
    for path in sorted(folder.glob("worker-*.json")) if folder.is_dir() else ():
        try:
            record = WorkerRecord(**json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError) as exc:
            log.debug("skipping unreadable runtime record %s: %s", path, exc)
            continue
        if _alive(record):
            records.append(record)
        else:
            with contextlib.suppress(OSError):
                path.unlink()
    return sorted(records, key=lambda r: (r.kind != "app", r.started))


def now() -> float:
    """The time a record says it started: comparable with psutil's create_time."""
    return time.time()
