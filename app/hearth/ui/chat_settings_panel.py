"""Per-chat settings: system prompt, preset picker and sampling (like a Modelfile).

Choosing a preset fills in its system prompt and sampling; any later edit is this
chat's own. Edits reach the controller (and the store) after a short pause.
"""

from __future__ import annotations

import asyncio
import logging

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QInputDialog,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from hearth.chats import AsyncChatStore, Preset, SamplingSettings
from hearth.ui.chat_session import ChatController
from hearth.ui.style.tokens import SPACE
from hearth.ui.tasks import TaskSet

log = logging.getLogger(__name__)

DEFAULT_TEXT = "default"
SAVE_DELAY_MS = 300
# name -> (minimum meaning "default", maximum, step, decimals)
_FLOATS = {
    "temperature": (-0.01, 5.0, 0.05, 2),
    "top_p": (-0.01, 1.0, 0.05, 2),
    "min_p": (-0.01, 1.0, 0.01, 2),
    "repeat_penalty": (-0.01, 10.0, 0.05, 2),
}
_INTS = {"top_k": (-1, 10_000), "max_tokens": (0, 1_000_000), "seed": (-1, 2**31 - 1)}
_LABELS = {
    "temperature": "Temperature",
    "top_p": "Top P",
    "top_k": "Top K",
    "min_p": "Min P",
    "repeat_penalty": "Repeat penalty",
    "max_tokens": "Max tokens",
    "seed": "Seed",
}


class ChatSettingsPanel(QWidget):
    changed = Signal()

    def __init__(
        self,
        db: AsyncChatStore,
        chat: ChatController,
        tasks: TaskSet,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.db = db
        self.chat = chat
        self._tasks = tasks
        self.presets: list[Preset] = []
        self.preset_box = QComboBox(self)
        self.preset_box.setObjectName("presetPicker")
        self.preset_box.setAccessibleName("Preset")
        self.save_preset_button = QPushButton("Save as preset…", self)
        self.save_preset_button.setAccessibleName("Save as preset")
        self.system_prompt = QPlainTextEdit(self)
        self.system_prompt.setObjectName("systemPrompt")
        self.system_prompt.setAccessibleName("System prompt")
        self.system_prompt.setPlaceholderText("System prompt (optional)")
        self.system_prompt.setMaximumHeight(90)
        self.fields: dict[str, QDoubleSpinBox | QSpinBox] = {}
        form = QFormLayout()
        for name, label in _LABELS.items():
            box: QDoubleSpinBox | QSpinBox
            if name in _FLOATS:
                lo, hi, step, decimals = _FLOATS[name]
                box = QDoubleSpinBox(self)
                box.setDecimals(decimals)
                box.setRange(lo, hi)
                box.setSingleStep(step)
                box.setValue(lo)
            else:
                box = QSpinBox(self)
                box.setRange(*_INTS[name])
                box.setValue(_INTS[name][0])
            box.setSpecialValueText(DEFAULT_TEXT)  # shown at the minimum: worker default
            box.setAccessibleName(label)
            box.setObjectName(f"sampling_{name}")
            box.valueChanged.connect(self._edited)
            self.fields[name] = box
            form.addRow(label, box)
        top = QHBoxLayout()
        top.addWidget(self.preset_box, 1)
        top.addWidget(self.save_preset_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(SPACE["s"], 0, SPACE["s"], 0)  # clear of the window's edge
        layout.addLayout(top)
        layout.addWidget(self.system_prompt)
        layout.addLayout(form)
        layout.addStretch(1)

        self._save_timer = QTimer(self)
        self._save_timer.setSingleShot(True)
        self._save_timer.setInterval(SAVE_DELAY_MS)
        self._save_timer.timeout.connect(self.commit)
        self._loading = False
        self.system_prompt.textChanged.connect(self._edited)
        self.preset_box.activated.connect(self._preset_chosen)
        self.save_preset_button.clicked.connect(self._ask_save_preset)
        chat.conversation_changed.connect(self.show_chat)
        chat.turn_starting.connect(self.commit_pending)

    # ------------------------------------------------------------------ values
    def sampling(self) -> SamplingSettings:
        values: dict[str, float | int] = {}
        for name, box in self.fields.items():
            if box.value() != box.minimum():
                values[name] = box.value()
        return SamplingSettings.from_dict(values)

    def set_values(
        self, system_prompt: str, sampling: SamplingSettings, preset_id: int | None
    ) -> None:
        self._loading = True
        try:
            if self.system_prompt.toPlainText() != system_prompt:
                self.system_prompt.setPlainText(system_prompt)
            for name, box in self.fields.items():
                value = getattr(sampling, name)
                if isinstance(box, QDoubleSpinBox):
                    box.setValue(box.minimum() if value is None else float(value))
                else:
                    box.setValue(box.minimum() if value is None else int(value))
            index = self.preset_box.findData(preset_id) if preset_id is not None else -1
            self.preset_box.setCurrentIndex(max(index, 0))
        finally:
            self._loading = False

    def show_chat(self) -> None:
        """Show the current chat's settings (after open / new chat)."""
        self._save_timer.stop()
        self.set_values(self.chat.system_prompt, self.chat.sampling, self.chat.preset_id)

    def _edited(self) -> None:
        if not self._loading:
            self._save_timer.start()

    def commit(self) -> None:
        """Hand the edited values to the chat now (also what the save timer does)."""
        self._save_timer.stop()
        preset = self.preset_box.currentData()
        self.chat.set_chat_settings(
            self.system_prompt.toPlainText(), self.sampling(), preset if preset else None
        )
        self.changed.emit()

    def commit_pending(self) -> None:
        """A turn starts: what was typed counts now. A spin box parses its text only on
        Enter or focus-out, and the save timer waits a moment; neither may win over an
        immediate Regenerate."""
        for box in self.fields.values():
            box.interpretText()
        if self._save_timer.isActive():
            self.commit()

    # ------------------------------------------------------------------ presets
    def load_presets(self) -> asyncio.Task[None]:
        return self._tasks.spawn(self._load_presets(), name="load-presets")

    async def _load_presets(self) -> None:
        self.presets = await self.db.run(lambda s: s.presets())
        self._loading = True
        self.preset_box.clear()
        self.preset_box.addItem("Custom", None)
        for preset in self.presets:
            self.preset_box.addItem(preset.name, preset.id)
        self._loading = False
        self.show_chat()

    def apply_preset(self, preset_id: int) -> None:
        preset = next((p for p in self.presets if p.id == preset_id), None)
        if preset is None:
            return
        self.set_values(preset.system_prompt, preset.sampling, preset.id)
        self.commit()

    def _preset_chosen(self, index: int) -> None:
        preset_id = self.preset_box.itemData(index)
        if preset_id is not None:
            self.apply_preset(int(preset_id))

    async def save_preset(self, name: str) -> Preset:
        prompt, sampling = self.system_prompt.toPlainText(), self.sampling()
        preset = await self.db.run(lambda s: s.save_preset(name, prompt, sampling))
        await self._load_presets()
        self.set_values(prompt, sampling, preset.id)
        self.commit()
        return preset

    def _ask_save_preset(self) -> None:
        name, ok = QInputDialog.getText(self, "Save preset", "Preset name:")
        if ok and name.strip():
            self._tasks.spawn(self.save_preset(name.strip()), name="save-preset")
