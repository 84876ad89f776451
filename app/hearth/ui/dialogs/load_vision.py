"""The Load dialog's vision projector: the one paired beside the model, another, or none.

A vision model reads images through its projector (``mmproj-*.gguf``). The Library pairs
one beside the model by the naming rule (``core/projector_pairing.py``); this card
shows that pair, or says none was found, and lets a person choose otherwise:

- another projector from the library, among those whose embeddings are as wide as the
  model's (the width read from their headers, ``library/projectors.py``): the ones
  that can serve it;
- any file ("Choose file…"), whose header is read on a worker thread and refused on
  the spot, with the reason, when it is no projector or made for another model;
- "None", to load the model for text alone (less memory, no images).

The choice is kept with the model's load choices (``mmproj``, ``vision``) and reaches
the worker through ``LoadOptions.projector_for``, the one definition both the
worker's launch and a load beside other models use. Its weights count in the estimate
(``projector_bytes``). Finding the pair lists a folder and reading a header is file
I/O: both run off the Qt thread.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from hearth.core.units import format_bytes
from hearth.library import LocalModel
from hearth.library.errors import InvalidModelFileError
from hearth.library.gguf_metadata import GgufMetadata
from hearth.library.projectors import (
    ProjectorFacts,
    mismatch,
    projector_beside,
    projector_facts,
    read_projector,
)
from hearth.ui.dialogs.load_sections import ToneLabel, compact_combo
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread
from hearth.ui.widgets.section import Section

log = logging.getLogger(__name__)

PAIRED = "paired"  # the combo's data: the projector beside the model (whatever is there)
NO_VISION = "none"  # load without a projector
LOOKING = "Looking for a projector beside the model…"
NOTE_NONE = "Loaded without a projector, the model reads text only and uses less memory."
NOTE_MISSING = (
    "No projector was found beside the model: it loads for text. If it is a vision "
    "model, choose its mmproj file."
)


class VisionSection(QObject):
    """The projector row (choice and "Choose file…") and its note, in a card of their
    own; ``changed`` on every change of what would be loaded."""

    changed = Signal()

    def __init__(self, parent: QWidget, tasks: TaskSet) -> None:
        super().__init__(parent)
        self._parent = parent
        self._tasks = tasks
        self._model = Path()
        self._meta: GgufMetadata | None = None
        self._paired: ProjectorFacts | None = None
        self._paired_error: str | None = None
        self._looked = False  # the model's folder was listed
        self._library: list[ProjectorFacts] = []
        self._chosen: list[ProjectorFacts] = []  # files picked by hand
        self._error: str | None = None  # why the last file picked was refused
        self._look: asyncio.Task[None] | None = None
        self._checks: list[asyncio.Task[None]] = []  # files being checked
        self.file_dialog: QFileDialog | None = None
        self.section: Section | None = None
        self.combo = QComboBox(parent)
        self.combo.setAccessibleName("Vision projector")
        self.combo.setToolTip("The image encoder loaded with the model (mmproj)")
        compact_combo(self.combo, 24)
        self.choose_button = QPushButton("Choose file…", parent)
        self.choose_button.setAccessibleName("Choose a projector file")
        self.choose_button.clicked.connect(self.choose_file)
        self.note = ToneLabel("visionNote", "Vision note", parent)
        self.combo.activated.connect(self._user_chose)
        self.combo.currentIndexChanged.connect(self._changed)
        self._fill()

    def add_to(self, layout: QVBoxLayout) -> Section:
        """Put the row and its note in a card of their own at the end of ``layout``."""
        self.section = Section(
            "Vision", "Whether the model reads images, and through which projector.",
            self._parent,
        )  # fmt: skip
        row = QHBoxLayout()
        row.addWidget(self.combo, 1)
        row.addWidget(self.choose_button)
        self.section.add_wide_row("Projector", row)
        self.section.body.addWidget(self.note)
        layout.addWidget(self.section)
        return self.section

    @property
    def looked(self) -> bool:
        """Whether the model's folder was searched for its pair (the row is settled)."""
        return self._looked

    # ------------------------------------------------------------------ inputs
    def set_target(self, model: Path) -> None:
        """The model to load: look for its pair beside it (off the Qt thread)."""
        for task in (self._look, *self._checks):
            if task is not None:
                task.cancel()  # the previous model's: its answers must not land here
        self._checks = []
        self._model, self._meta = Path(model), None
        self._paired, self._paired_error, self._looked = None, None, False
        self._chosen, self._error = [], None
        self._fill()
        self._look = self._tasks.spawn(self._find_pair(self._model), name="load-vision-pair")

    def set_meta(self, meta: GgufMetadata) -> None:
        """The model's header: its width judges the projectors."""
        self._meta = meta
        self._fill()

    def set_models(self, models: list[LocalModel]) -> None:
        """The library's models (already read): its projectors are the choices."""
        found = []
        for model in models:
            if not model.ok or model.kind != "mmproj" or model.metadata is None:
                continue
            try:
                found.append(projector_facts(model.path, model.metadata))
            except InvalidModelFileError as exc:
                log.debug("not offered as a projector: %s", exc)
        self._library = found
        self._fill()

    async def _find_pair(self, model: Path) -> None:
        paired = await in_thread(projector_beside, model)
        if paired is not None:
            try:
                self._paired = await in_thread(read_projector, paired)
            except InvalidModelFileError as exc:  # damaged: said, and not loaded
                self._paired_error = str(exc)
        self._looked = True
        self._fill()

    def choose_file(self) -> QFileDialog:
        """Qt's file dialog, in the model's folder; a file chosen is then checked."""
        dialog = QFileDialog(self._parent, "Choose a vision projector", str(self._model.parent),
                             "GGUF files (*.gguf)")  # fmt: skip
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.fileSelected.connect(lambda name: self.use_file(Path(name)))
        self.file_dialog = dialog
        dialog.open()
        return dialog

    def use_file(self, path: Path) -> asyncio.Task[None]:
        """Check ``path`` as this model's projector (off the Qt thread), then choose it;
        a file that can't serve is refused in the note and the choice stays."""
        task = self._tasks.spawn(self._check_file(path), name="load-vision-file")
        self._checks = [t for t in self._checks if not t.done()] + [task]
        return task

    async def _check_file(self, path: Path) -> None:
        try:
            facts = await in_thread(read_projector, path)
        except InvalidModelFileError as exc:
            self._refuse(str(exc))
            return
        except OSError as exc:
            self._refuse(f"{path.name} can't be read: {exc.strerror or exc}")
            return
        problem = self._mismatch(facts)
        if problem is not None:
            self._refuse(problem)
            return
        self._error = None
        if self._paired is not None and self._paired.path == path:
            self.combo.setCurrentIndex(self.combo.findData(PAIRED))
        else:
            if self.combo.findData(str(path)) < 0:
                self._chosen.append(facts)
                self._fill()
            self.combo.setCurrentIndex(self.combo.findData(str(path)))
        self._changed()

    def _refuse(self, message: str) -> None:
        log.info("projector refused: %s", message)
        self._error = message
        self._changed()

    def _user_chose(self) -> None:
        self._error = None
        self._changed()

    # ------------------------------------------------------------------ choices
    def _mismatch(self, facts: ProjectorFacts) -> str | None:
        meta = self._meta
        return mismatch(facts, self._model.name, meta.embedding_length if meta else None)

    def _fill(self) -> None:
        chosen = self.combo.currentData()
        self.combo.blockSignals(True)
        self.combo.clear()
        if not self._looked:
            self.combo.addItem(LOOKING, PAIRED)
        elif self._paired is not None:
            self.combo.addItem(f"{self._paired.path.name} (beside the model)", PAIRED)
        else:
            self.combo.addItem("None found beside the model", PAIRED)
        paired = self._paired.path if self._paired is not None else None
        for facts in [*self._library, *self._chosen]:
            if facts.path == paired or self.combo.findData(str(facts.path)) >= 0:
                continue
            if self._mismatch(facts) is None:
                label = f"{facts.path.name} · {format_bytes(facts.size_bytes)}"
                self.combo.addItem(label, str(facts.path))
        self.combo.addItem("None: load without vision", NO_VISION)
        index = self.combo.findData(chosen) if chosen is not None else -1
        self.combo.setCurrentIndex(max(index, 0))
        self.combo.blockSignals(False)
        self._changed()

    def selected(self) -> ProjectorFacts | None:
        """The projector that would be loaded (None: none)."""
        data = self.combo.currentData()
        if data == PAIRED:
            return self._paired
        return next((f for f in [*self._library, *self._chosen] if str(f.path) == data), None)

    def projector_bytes(self) -> int:
        """What the chosen projector adds to the estimate (its weights)."""
        facts = self.selected()
        return facts.size_bytes if facts is not None else 0

    def problem(self) -> str | None:
        """Why the choice can't be loaded (the Load button waits), else None: the pair
        beside the model is damaged or made for another model."""
        if self.combo.currentData() != PAIRED:
            return None
        if self._paired_error is not None:
            return self._paired_error
        return self._mismatch(self._paired) if self._paired is not None else None

    def options(self) -> dict[str, Any]:
        """``LoadOptions`` fields: mmproj (a file chosen; None: the pair) and vision."""
        data = self.combo.currentData()
        by_hand = isinstance(data, str) and data not in (PAIRED, NO_VISION)
        return {"mmproj": data if by_hand else None, "vision": data != NO_VISION}

    def restore(self, saved: dict[str, Any]) -> None:
        """Put back saved choices (``load_choices``): no vision, or a file chosen (read
        again: it may have gone or changed since)."""
        if saved.get("vision") is False:
            self.combo.setCurrentIndex(self.combo.findData(NO_VISION))
        elif isinstance(saved.get("mmproj"), str):
            self.use_file(Path(saved["mmproj"]))

    def _changed(self) -> None:
        problem = self._error or self.problem()
        self.note.set_tone("danger" if problem else "muted")
        data = self.combo.currentData()
        if problem:
            text = problem
        elif data == NO_VISION:
            text = NOTE_NONE
        elif data == PAIRED and self._looked and self._paired is None:
            text = NOTE_MISSING
        elif (facts := self.selected()) is not None:
            width = f", {facts.n_embd}-wide" if facts.n_embd else ""
            text = (f"The model reads images through {facts.path.name} ({facts.projector_type}"
                    f"{width}, {format_bytes(facts.size_bytes)}).")  # fmt: skip
        else:
            text = LOOKING
        self.note.setText(text)
        self.changed.emit()
