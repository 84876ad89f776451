"""Opening the Load dialog in tests, settled: its header read and its library listed.

The dialog reads the file's header and fills its model list off the Qt thread; tests
that look at it wait for both, on the dialog's own state, the same way everywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hearth.hardware import SystemMemory
from hearth.ui.app_settings import SettingsStore
from hearth.ui.dialogs.load_dialog import LoadDialog

GIB = 1 << 30
MACHINE = SystemMemory(8 * GIB, 6 * GIB, 4, 8)  # no GPU: the plain CPU estimate


def open_load_dialog(
    arun: Any,
    model: Path | str,
    store: SettingsStore,
    *,
    system: SystemMemory = MACHINE,
    **kwargs: Any,
) -> LoadDialog:
    """Show a Load dialog for ``model`` (``kwargs`` go to LoadDialog) once its header
    and library list are in."""
    dialog = LoadDialog(model, store, system=system, **kwargs)
    dialog.show()
    arun(arun.wait_until(lambda: dialog.meta is not None, 30, "the header"))
    arun(arun.wait_until(dialog.model_combo.fill_task.done, 30, "the library"))
    return dialog
