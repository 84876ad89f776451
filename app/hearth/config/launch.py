"""How to start this same program again (the worker, the quantizer) as a child process.

Packaged apps (Briefcase) have no Python interpreter and no ``-m``: ``sys.executable``
is the app's own stub, which runs Hearth's ``__main__`` with the arguments it is given.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PACKAGED_ENV = "HEARTH_PACKAGED"


def is_packaged() -> bool:
    """True when ``sys.executable`` is not a Python interpreter but the app itself."""
    if getattr(sys, "frozen", False) or os.environ.get(PACKAGED_ENV) == "1":
        return True
    return not Path(sys.executable).name.lower().startswith(("python", "pypy"))


def relaunch_prefix() -> list[str]:
    """The command prefix that re-runs Hearth: ``[app]`` or ``[python, -m, hearth]``."""
    if is_packaged():
        return [sys.executable]
    return [sys.executable, "-m", "hearth"]
