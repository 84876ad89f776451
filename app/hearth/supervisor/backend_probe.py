"""Which llama.cpp build this install has, asked of a short child process.

The GUI never loads llama.cpp itself (the engine is worker-only): loading it would map
every GPU backend into the GUI process, and a CUDA build can create a context there that
holds GPU memory the model then lacks. ``hearth --backend-info`` answers instead, once
per probe object.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hearth.config.launch import relaunch_prefix

log = logging.getLogger(__name__)

BACKEND_INFO_FLAG = "--backend-info"
_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class BackendReport:
    system_info: str  # llama_print_system_info(): "CPU : AVX2 = 1 | ..."
    gpu_offload: bool
    error: str | None = None  # why the probe failed; then gpu_offload is False


def query_backend(timeout_s: float = _TIMEOUT_S) -> BackendReport:
    """Run the probe (blocking: call it off the Qt thread)."""
    kwargs: dict[str, Any] = {}
    if sys.platform == "win32":
        kwargs["creationflags"] = subprocess.CREATE_NO_WINDOW
    try:
        done = subprocess.run(
            [*relaunch_prefix(), BACKEND_INFO_FLAG],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            **kwargs,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("backend probe failed: %s", exc)
        return BackendReport("", False, str(exc))
    lines = done.stdout.strip().splitlines()
    try:
        data = json.loads(lines[-1]) if done.returncode == 0 and lines else None
        if not isinstance(data, dict):
            raise ValueError("no report")
        return BackendReport(str(data["system_info"]), bool(data["gpu_offload"]))
    except (ValueError, KeyError) as exc:
        detail = (done.stderr.strip().splitlines() or [str(exc)])[-1]
        log.warning("backend probe failed (exit %s): %s", done.returncode, detail)
        return BackendReport("", False, detail)


class BackendProbe:
    """Asks once and remembers; safe to call from several worker threads."""

    def __init__(self, query: Callable[[], BackendReport] = query_backend) -> None:
        self._query = query
        self._lock = threading.Lock()
        self._report: BackendReport | None = None

    def report(self) -> BackendReport:
        with self._lock:
            if self._report is None:
                self._report = self._query()
            return self._report
