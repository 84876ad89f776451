"""The arrows of spin and combo boxes, as PNG files the stylesheet can point at.

Giving QAbstractSpinBox or QComboBox a ``border`` in the stylesheet makes Qt draw all
their sub-controls from the stylesheet too, and Fusion's own arrows disappear. QSS can
only show an image from a file (``image: url(...)``), so the qtawesome chevrons are
rendered once per theme and state into a folder made once per process (a temporary
folder, removed at exit; never the repository). Each file also gets an ``@2x``
sibling, which Qt picks on high-DPI screens.
"""

from __future__ import annotations

import atexit
import functools
import logging
import shutil
import tempfile
from pathlib import Path

import qtawesome as qta
from PySide6.QtCore import QSize
from PySide6.QtGui import QGuiApplication

from hearth.ui.style.tokens import Tokens

log = logging.getLogger(__name__)

ARROW_PX = 14  # the drawn size of an arrow, in device-independent pixels
CHEVRONS = {"up": "mdi6.chevron-up", "down": "mdi6.chevron-down"}


@functools.cache
def _folder() -> Path:
    """The process's arrow folder, created on first use and removed at exit."""
    folder = Path(tempfile.mkdtemp(prefix="hearth-arrows-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


@functools.cache
def _render(name: str, color: str) -> str | None:
    """The path (posix form, as QSS wants) of ``name`` in ``color``; None when it
    cannot be drawn (no QGuiApplication yet, or the icon font failed)."""
    if QGuiApplication.instance() is None:
        return None
    stem = f"{name.rsplit('.', maxsplit=1)[-1]}-{color.lstrip('#')}"
    target = _folder() / f"{stem}.png"
    try:
        icon = qta.icon(name, color=color)
        for scale, path in ((1, target), (2, _folder() / f"{stem}@2x.png")):
            pixmap = icon.pixmap(QSize(ARROW_PX, ARROW_PX), float(scale))
            if not pixmap.save(str(path), "PNG"):
                raise OSError(f"could not write {path}")
    except Exception:  # a missing arrow must not take the stylesheet down
        log.exception("could not render the %s arrow", name)
        return None
    return target.as_posix()


def arrow_files(t: Tokens) -> dict[str, str]:
    """``{"up", "down", "up_disabled", "down_disabled"}`` → PNG paths for theme ``t``;
    empty when they cannot be rendered (the stylesheet then leaves arrows unstyled)."""
    files: dict[str, str] = {}
    for direction, name in CHEVRONS.items():
        for suffix, color in (("", t.text), ("_disabled", t.disabled_text)):
            path = _render(name, color)
            if path is None:
                return {}
            files[direction + suffix] = path
    return files
