"""Quantize a library model: type picker, progress and cancel (``QuantizeJob``).

The job's listeners run on its reader thread; they only emit signals, and the panel
updates itself on the Qt thread.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QProgressBar, QWidget

from hearth.library import LocalModel, ModelSource
from hearth.library.quantize_job import JobState, QuantizeJob
from hearth.ui.pages.common import button
from hearth.ui.tasks import TaskSet

QUANT_CHOICES = ["Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "Q4_0", "Q3_K_M", "Q2_K", "IQ4_XS", "F16"]
_QUANT_IN_NAME = re.compile(r"[-_.](F32|F16|BF16|Q\d\w*|IQ\d\w*)$", re.IGNORECASE)


def output_path(model: LocalModel, qtype: str, models_dir: Path) -> Path:
    """Next to the source when Hearth owns it, else in ``models/quantized/``."""
    stem = _QUANT_IN_NAME.sub("", model.path.stem) or model.path.stem
    folder = model.path.parent if model.source is ModelSource.HEARTH else models_dir / "quantized"
    return folder / f"{stem}-{qtype}.gguf"


class QuantizePanel(QWidget):
    finished = Signal(object)  # the QuantizeJob, once it ended (any state)
    _progress = Signal(float)
    _done = Signal(object)

    def __init__(self, tasks: TaskSet, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._tasks = tasks
        self.job: QuantizeJob | None = None
        self.launcher: list[str] | None = None  # None: re-run Hearth itself (tests may swap)
        self.type_combo = QComboBox(self)
        self.type_combo.addItems(QUANT_CHOICES)
        self.type_combo.setAccessibleName("Quantization type")
        self.start_button = button("Quantize", "Quantize the selected model", lambda: None)
        self.bar = QProgressBar(self)
        self.bar.setRange(0, 1000)
        self.bar.setAccessibleName("Quantize progress")
        self.bar.hide()
        self.cancel_button = button("Cancel", "Cancel quantizing", self.cancel)
        self.cancel_button.hide()
        self.status = QLabel(self)
        self.status.setWordWrap(True)
        self.status.setAccessibleName("Quantize status")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(QLabel("Quantize the selected model to:", self))
        row.addWidget(self.type_combo)
        row.addWidget(self.start_button)
        row.addWidget(self.bar)
        row.addWidget(self.cancel_button)
        row.addWidget(self.status, 1)
        self._progress.connect(lambda f: self.bar.setValue(round(f * 1000)))
        self._done.connect(self._on_done)

    @property
    def running(self) -> bool:
        return self.job is not None and self.job.state is JobState.RUNNING

    def start(self, model: LocalModel, qtype: str, dst: Path) -> QuantizeJob | None:
        if self.running:
            self.status.setText("A quantization is already running.")
            return None
        if not model.ok:
            self.status.setText(f"{model.name} cannot be read: {model.error}")
            return None
        source_quant = model.metadata.quantization if model.metadata else "?"
        job = QuantizeJob(
            model.path, dst, qtype,
            allow_requantize=source_quant not in ("F32", "F16", "BF16"),
            launcher=self.launcher,
            on_progress=self._progress.emit,
            on_done=self._done.emit,
        )  # fmt: skip
        self.job = job
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            job.start()
        except OSError as exc:
            self.job = None
            self.status.setText(f"Could not start quantizing: {exc}")
            return None
        self.bar.setValue(0)
        self.bar.show()
        self.cancel_button.show()
        self.start_button.setEnabled(False)
        self.status.setText(f"Quantizing {model.name} to {qtype}…")
        return job

    def cancel(self) -> asyncio.Task[None] | None:
        job = self.job
        if job is None or job.state is not JobState.RUNNING:
            return None
        self.status.setText("Cancelling…")
        return self._tasks.spawn(asyncio.to_thread(job.cancel), name="quantize-cancel")

    def _on_done(self, job: QuantizeJob) -> None:
        if job is not self.job:
            return
        self.bar.hide()
        self.cancel_button.hide()
        self.start_button.setEnabled(True)
        text = {
            JobState.DONE: f"Done: {job.dst.name}",
            JobState.CANCELLED: "Quantizing was cancelled; nothing was kept.",
        }.get(job.state, f"Quantizing failed: {job.error}")
        self.status.setText(text)
        self.finished.emit(job)
