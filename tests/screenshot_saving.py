"""Where the docs' screenshots go and how a window or dialog is photographed, for the
screenshot tests (tests/ui/test_screenshots*.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from PySide6.QtWidgets import QWidget

DOCS = Path(__file__).resolve().parents[1] / "docs" / "screenshots"
SIZE = (1400, 900)
NARROW = (900, 650)
THEMES = ("light", "dark")


def save_shot(widget: QWidget, tmp_path: Path, name: str) -> Path:
    """``widget`` as ``name``.png in ``tmp_path``; copied to docs/screenshots/ with
    HEARTH_SAVE_DOCS_SCREENSHOT=1."""
    out = tmp_path / f"{name}.png"
    assert widget.grab().save(str(out))
    if os.environ.get("HEARTH_SAVE_DOCS_SCREENSHOT"):
        DOCS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out, DOCS / out.name)
    return out


def fit_dialog(dialog: QWidget, size: tuple[int, int]) -> None:
    """A dialog as it opens on a screen of ``size``: its own size, within the screen."""
    hint = dialog.sizeHint().expandedTo(dialog.minimumSize())
    natural = dialog.size().expandedTo(hint)
    dialog.resize(min(natural.width(), size[0] - 40), min(natural.height(), size[1] - 40))
