"""The Load dialog's model picker: the library's loadable models, in a combo box.

It starts with the model the dialog was opened for (so it is usable at once) and fills
in the rest from ``Library.models()`` on a worker thread. Choosing another emits
``model_chosen`` with its path; the dialog re-reads that model's header and estimate.
The models read are kept in ``models`` (the draft-model picker lists them too), the
projectors in ``projectors`` (the Vision row offers them).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QWidget

from hearth.core.units import format_bytes
from hearth.library import Library, LocalModel
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread

log = logging.getLogger(__name__)


def _same(a: Path, b: Path) -> bool:
    try:
        return a.expanduser().resolve() == b.expanduser().resolve()
    except OSError:
        return a == b


class ModelChoice(QComboBox):
    model_chosen = Signal(object)  # Path
    filled = Signal()  # the library's models are listed

    def __init__(
        self,
        current: Path,
        library: Library,
        tasks: TaskSet,
        parent: QWidget | None,
        *,
        label: str | None = None,
    ):
        """``label`` names ``current`` instead of its file name (a remote model's
        ``engine/model``)."""
        super().__init__(parent)
        self.setAccessibleName("Model to load")
        self.setToolTip("Any model in the library")
        self.library = library
        self.models: list[LocalModel] = []
        self.projectors: list[LocalModel] = []  # the library's vision projectors (mmproj)
        self._current_label = label or current.name
        self.addItem(self._current_label, str(current))
        self.fill_task: asyncio.Task[None] = tasks.spawn(self._fill(current), name="load-models")
        self.activated.connect(self._chosen)

    async def _fill(self, current: Path) -> None:
        try:
            models = await in_thread(self.library.models)
        except Exception as exc:
            log.warning("could not list the library for the Load dialog: %s", exc)
            self.filled.emit()
            return
        loadable = [m for m in models if m.ok and m.kind == "model"]
        self.models = loadable
        self.projectors = [m for m in models if m.ok and m.kind == "mmproj"]
        chosen = self.current_path()
        self.blockSignals(True)
        self.clear()
        if not any(_same(m.path, current) for m in loadable):
            self.addItem(self._current_label, str(current))
        for model in loadable:
            self.addItem(self._label(model), str(model.path))
        for i in range(self.count()):
            if _same(Path(str(self.itemData(i))), chosen):
                self.setCurrentIndex(i)
        self.blockSignals(False)
        self.filled.emit()

    @staticmethod
    def _label(model: LocalModel) -> str:
        quant = model.metadata.quantization if model.metadata else ""
        parts = [model.name, quant, format_bytes(model.size_bytes)]
        return " · ".join(p for p in parts if p)

    def current_path(self) -> Path:
        return Path(str(self.currentData()))

    def paths(self) -> list[Path]:
        return [Path(str(self.itemData(i))) for i in range(self.count())]

    def choose(self, path: Path) -> None:
        """Select ``path`` as if the user had (tests, keyboard)."""
        for i in range(self.count()):
            if _same(Path(str(self.itemData(i))), path):
                self.setCurrentIndex(i)
                self._chosen(i)
                return
        raise KeyError(str(path))

    def _chosen(self, index: int) -> None:
        self.model_chosen.emit(Path(str(self.itemData(index))))
