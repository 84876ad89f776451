"""Running Python in a child process and reading the JSON line it ends with.

libmtmd and llama.cpp abort the process on some files (a GGML_ASSERT); tests that first
try such a file in a child see an exit code instead of losing the test run. Each child
prints one JSON object as its last line of output; this is the one way they are run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ChildRun:
    result: dict[str, Any]  # the JSON object on the child's last line of output
    stderr: str


def run_python(*argv: str | Path, timeout: float = 120) -> ChildRun:
    """Run ``python *argv`` (``"-c", source, ...`` or a script and its arguments) and
    fail the test, with the end of its stderr, unless it exits 0."""
    done = subprocess.run(
        [sys.executable, *map(str, argv)], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return ChildRun(json.loads(done.stdout.strip().splitlines()[-1]), done.stderr)
