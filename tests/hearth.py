"""Entry point for ``briefcase dev --test`` / ``briefcase run --test``.

Briefcase runs ``tests.<app name>`` as a module; this runs pytest on the whole suite
(or on the arguments given after ``--``), prints the exit marker Briefcase looks for,
and exits with pytest's status.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def run_tests() -> int:
    import pytest

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    project = Path(__file__).resolve().parent.parent
    os.chdir(project)
    args = sys.argv[1:] or [str(project / "tests"), "-q", "-p", "no:cacheprovider"]
    return int(pytest.main(args))


if __name__ == "__main__":
    code = run_tests()
    print(f">>>>>>>>>> EXIT {code} <<<<<<<<<<")  # how Briefcase reads the result
    sys.exit(code)
