"""Settings → Models: how many models stay loaded, the memory they may hold, how long a
model loaded on demand stays, and the prompt cache on disk (where, how big, what it
holds, Clear).

The values are saved as they change and reach the worker as its launch flags
(``WorkerOptions`` → ``LaunchSettings``: ``--max-models``, ``--memory-budget``,
``--prompt-cache``, ``--prompt-cache-max``): a running worker keeps its own until it is
started again, which the note under the card says. "Auto" (a spin box at 0) leaves the
worker's default: the memory budget the fit estimator finds (RAM plus each GPU's memory,
less headroom), and a prompt cache of 10% of the free space, at most 20 GiB.

What the cache holds is counted, and Clear deletes it, on a worker thread
(``supervisor.prompt_cache_folder``), with the lock the workers' own eviction takes, so
clearing is safe while a worker uses the folder.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from hearth.config.launch import default_prompt_cache
from hearth.core.residency import DEFAULT_JIT_TTL_S, DEFAULT_MAX_MODELS, ResidencyLimits
from hearth.core.units import format_bytes
from hearth.supervisor.launch_options import WorkerOptions
from hearth.supervisor.prompt_cache_folder import CacheUsage, clear, usage
from hearth.ui.app_settings import SettingsStore
from hearth.ui.style.tokens import SPACE
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread
from hearth.ui.widgets.section import Message, Section
from hearth.ui.widgets.switch import Switch

log = logging.getLogger(__name__)

MAX_MODELS_LIMIT = 16
MAX_GIB = 4096.0
AUTO = "Auto"
APPLIES = (
    "These apply when the model worker next starts: after Eject (Ctrl+E), or when Hearth "
    "next opens. The prompt cache's Clear applies at once."
)


def usage_text(held: CacheUsage) -> str:
    if not held.entries:
        return "Empty"
    noun = "prompt" if held.entries == 1 else "prompts"
    return f"{format_bytes(held.size_bytes)} in {held.entries} saved {noun}"


def _gib_spin(parent: QWidget, name: str, value: float | None) -> QDoubleSpinBox:
    """A GiB spin box where 0 reads "Auto" (the worker's own default)."""
    spin = QDoubleSpinBox(parent)
    spin.setAccessibleName(name)
    spin.setRange(0.0, MAX_GIB)
    spin.setDecimals(1)
    spin.setSingleStep(0.5)
    spin.setSuffix(" GiB")
    spin.setSpecialValueText(AUTO)
    spin.setValue(value or 0.0)
    return spin


class ModelsBox(Section):
    """The "Models" card; ``changed`` carries the new ``WorkerOptions``."""

    changed = Signal(object)

    def __init__(self, store: SettingsStore, parent: QWidget | None = None) -> None:
        super().__init__(
            "Models",
            "Several models can stay loaded at once (a chat model and your IDE's "
            "completion model, say). Long prompts are saved on disk, so a restart or a "
            "switch back to a model doesn't compute them again.",
            parent,
            icon_kind="model",
        )
        self.setObjectName("modelsSection")
        self.store = store
        self._tasks = TaskSet()
        s = store.settings
        self.max_models_spin = QSpinBox(self)
        self.max_models_spin.setAccessibleName("Models loaded at once")
        self.max_models_spin.setRange(1, MAX_MODELS_LIMIT)
        self.max_models_spin.setValue(s.max_models or DEFAULT_MAX_MODELS)
        self.budget_spin = _gib_spin(self, "Memory budget", s.memory_budget_gib)
        self.ttl_spin = QSpinBox(self)
        self.ttl_spin.setAccessibleName("Unload models loaded on demand after")
        self.ttl_spin.setRange(1, 24 * 60)
        self.ttl_spin.setSuffix(" min idle")
        self.ttl_spin.setValue(round(s.jit_ttl_minutes or DEFAULT_JIT_TTL_S / 60))
        self.add_row(
            "Models loaded at once",
            self.max_models_spin,
            "Past this, the least recently used idle model an app loaded on demand makes "
            "room; models you load stay until you eject them.",
        )
        self.add_row(
            "Memory budget",
            self.budget_spin,
            "What loaded models may hold together. Auto: what this computer has free "
            "(RAM plus each GPU's memory), less headroom.",
        )
        self.add_row(
            "Unload models loaded on demand after",
            self.ttl_spin,
            "A model an app asked for by name unloads after this long unused; models "
            "you load stay until you eject them.",
        )
        self._cache_rows(s.prompt_cache_enabled, s.prompt_cache_folder, s.prompt_cache_max_gib)
        self.note = QLabel(APPLIES, self)
        self.note.setProperty("role", "muted")
        self.note.setWordWrap(True)
        self.running_label = QLabel(self)  # what the running worker was started with
        self.running_label.setObjectName("modelsRunning")
        self.running_label.setProperty("role", "muted")
        self.running_label.setVisible(False)
        self.body.addWidget(self.running_label)
        self.body.addWidget(self.note)
        for spin in (self.max_models_spin, self.ttl_spin):
            spin.valueChanged.connect(self._save)
        for dspin in (self.budget_spin, self.cache_max_spin):
            dspin.valueChanged.connect(self._save)
        self.cache_switch.toggled.connect(self._save)
        self.cache_switch.toggled.connect(self._cache_toggled)
        self._cache_toggled(self.cache_switch.isChecked())

    def _cache_rows(self, enabled: bool, folder: str | None, max_gib: float | None) -> None:
        self.cache_switch = Switch("", self)
        self.cache_switch.setAccessibleName("Save long prompts on disk")
        self.cache_switch.setChecked(enabled)
        self.add_row(
            "Prompt cache on disk",
            self.cache_switch,
            "Saves the computed state of prompts of 1,024 tokens or more, for any model.",
        )
        self.folder_field = QLineEdit(folder or str(default_prompt_cache().folder), self)
        self.folder_field.setReadOnly(True)
        self.folder_field.setAccessibleName("Prompt cache folder")
        self.choose_button = QPushButton("Choose…", self)
        self.choose_button.setAccessibleName("Choose the prompt cache folder")
        self.choose_button.clicked.connect(self._choose_folder)
        self.default_button = QPushButton("Default", self)
        self.default_button.setAccessibleName("Use the default prompt cache folder")
        self.default_button.clicked.connect(lambda: self.set_folder(None))
        line = QHBoxLayout()
        line.setSpacing(SPACE["s"])
        line.addWidget(self.folder_field, 1)
        line.addWidget(self.choose_button)
        line.addWidget(self.default_button)
        self.add_wide_row("Prompt cache folder", line)
        self.cache_max_spin = _gib_spin(self, "Prompt cache size", max_gib)
        self.add_row(
            "Prompt cache size",
            self.cache_max_spin,
            "The least recently used prompts go first past this. Auto: 10% of the free "
            "space, at most 20 GiB.",
        )
        self.held_label = QLabel("Counting…", self)
        self.held_label.setObjectName("promptCacheHeld")
        self.clear_button = QPushButton("Clear", self)
        self.clear_button.setAccessibleName("Clear the prompt cache")
        self.clear_button.clicked.connect(self.clear_cache)
        held = QHBoxLayout()
        held.setSpacing(SPACE["s"])
        held.addWidget(self.held_label, 1)
        held.addWidget(self.clear_button)
        self.add_wide_row("Saved prompts", held)
        self.cache_message = Message(self)
        self.body.addWidget(self.cache_message)

    def _cache_toggled(self, on: bool) -> None:
        """Off: where and how big don't matter (what is saved can still be cleared)."""
        for widget in (self.folder_field, self.choose_button, self.default_button,
                       self.cache_max_spin):  # fmt: skip
            widget.setEnabled(on)

    def show_limits(self, limits: ResidencyLimits | None) -> None:
        """The running worker's limits (None: no worker), so "Auto" has a number."""
        if limits is not None:
            noun = "model" if limits.max_models == 1 else "models"
            self.running_label.setText(
                f"The model worker now: up to {limits.max_models} {noun} within "
                f"{format_bytes(limits.memory_budget_bytes)}."
            )
        self.running_label.setVisible(limits is not None)

    # ------------------------------------------------------------------ values
    def options(self) -> WorkerOptions:
        return WorkerOptions.from_settings(self.store.settings)

    def _save(self) -> None:
        s = self.store.settings
        s.max_models = self.max_models_spin.value()
        s.memory_budget_gib = self.budget_spin.value() or None
        s.jit_ttl_minutes = float(self.ttl_spin.value())
        s.prompt_cache_enabled = self.cache_switch.isChecked()
        s.prompt_cache_max_gib = self.cache_max_spin.value() or None
        self.store.save()
        self.changed.emit(self.options())

    def _choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Prompt cache folder")
        if folder:
            self.set_folder(Path(folder))

    def set_folder(self, folder: Path | None) -> asyncio.Task[None]:
        """Keep the prompt cache in ``folder`` (None: the default one)."""
        self.store.settings.prompt_cache_folder = str(folder) if folder is not None else None
        self.folder_field.setText(str(folder or default_prompt_cache().folder))
        self._save()
        return self.refresh_usage()

    # ------------------------------------------------------------------ usage
    def cache_folder(self) -> Path:
        return Path(self.folder_field.text())

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        self.refresh_usage()

    def refresh_usage(self) -> asyncio.Task[None]:
        return self._tasks.spawn(self._count(), name="prompt-cache-usage")

    async def _count(self) -> None:
        held = await in_thread(usage, self.cache_folder())
        self.held_label.setText(usage_text(held))
        self.clear_button.setEnabled(held.entries > 0)

    def clear_cache(self) -> asyncio.Task[None]:
        """Delete the saved prompts (off the Qt thread); the label says what is left."""
        return self._tasks.spawn(self._clear(), name="prompt-cache-clear")

    async def _clear(self) -> None:
        self.clear_button.setEnabled(False)
        self.held_label.setText("Clearing…")
        try:
            left = await in_thread(clear, self.cache_folder())
        except OSError as exc:
            self.cache_message.setText(f"Could not clear the prompt cache: {exc}")
            await self._count()
            return
        self.held_label.setText(usage_text(left))
        self.clear_button.setEnabled(left.entries > 0)
        self.cache_message.setText(
            "Cleared."
            if not left.entries
            else "A model worker was saving a prompt meanwhile; clear again to remove it too."
        )
