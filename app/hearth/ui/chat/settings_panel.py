"""Per-chat settings: system prompt, preset picker and sampling (like a Modelfile).

Choosing a preset fills in its system prompt and sampling; any later edit is this
chat's own. Edits reach the controller (and the store) after a short pause.

A sampling box at its minimum sends nothing, so the worker's own default applies; the
box says which value that is ("Default (0.8)", from ``core.sampling.SamplingParams``,
the one place those defaults live), not a bare "default". The panel is a titled column
with captioned groups (preset, system prompt, sampling) on the spacing scale.
"""

from __future__ import annotations

import asyncio
import logging

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from hearth.chats import AsyncChatStore, Preset, SamplingSettings
from hearth.core.sampling import SamplingParams
from hearth.ui.chat.session import ChatController
from hearth.ui.style.tokens import SPACE
from hearth.ui.tasks import TaskSet

log = logging.getLogger(__name__)

_WORKER = SamplingParams()  # what the worker uses for a field the chat leaves unset
# The text a box shows at its minimum (nothing sent): the value that applies then.
DEFAULT_TEXTS = {
    "temperature": f"Default ({_WORKER.temperature:g})",
    "top_p": f"Default ({_WORKER.top_p:g})",
    "top_k": f"Default ({_WORKER.top_k})",
    "min_p": f"Default ({_WORKER.min_p:g})",
    "repeat_penalty": f"Default ({_WORKER.repeat_penalty:g})",
    "max_tokens": "No limit",  # a chat reply runs to the end of its turn or the context
    "seed": "Random",
}
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
_HINTS = {
    "temperature": "Randomness: lower is more focused and repeatable, higher more varied",
    "top_p": "Sample only from the most likely tokens that together reach this probability",
    "top_k": "Sample only from this many most likely tokens",
    "min_p": "Drop tokens less likely than this fraction of the most likely one",
    "repeat_penalty": "Above 1 makes repeating recent words less likely",
    "max_tokens": "The longest a reply may get, in tokens",
    "seed": "A fixed seed makes the same question give the same reply",
}
FIELD_WIDTH = 116  # px: the sampling boxes, one width so their right edges line up


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
        self.title = QLabel("Chat settings", self)
        self.title.setProperty("role", "subtitle")
        self.preset_box = QComboBox(self)
        self.preset_box.setObjectName("presetPicker")
        self.preset_box.setAccessibleName("Preset")
        self.preset_box.setToolTip("A saved system prompt and sampling, to start from")
        self.save_preset_button = QPushButton("Save as preset…", self)
        self.save_preset_button.setAccessibleName("Save as preset")
        self.save_preset_button.setToolTip("Keep this system prompt and sampling by a name")
        self.system_prompt = QPlainTextEdit(self)
        self.system_prompt.setObjectName("systemPrompt")
        self.system_prompt.setAccessibleName("System prompt")
        self.system_prompt.setPlaceholderText("How the model should answer, e.g. “Be brief.”")
        self.system_prompt.setMaximumHeight(110)
        self.reset_button = QToolButton(self)
        self.reset_button.setObjectName("resetSamplingButton")
        self.reset_button.setText("Reset")
        self.reset_button.setToolTip("Back to the model's defaults")
        self.reset_button.setAccessibleName("Reset sampling")
        self.reset_button.setAutoRaise(True)
        self.reset_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.reset_button.clicked.connect(self.reset_sampling)
        self.fields: dict[str, QDoubleSpinBox | QSpinBox] = {}
        form = QFormLayout()
        form.setContentsMargins(0, 0, 0, 0)
        form.setHorizontalSpacing(SPACE["m"])
        form.setVerticalSpacing(SPACE["s"])
        form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.FieldsStayAtSizeHint)
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
            box.setSpecialValueText(DEFAULT_TEXTS[name])  # at the minimum: the worker's
            box.setAccessibleName(label)
            box.setObjectName(f"sampling_{name}")
            box.setToolTip(_HINTS[name])
            box.setFixedWidth(FIELD_WIDTH)
            box.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            box.valueChanged.connect(self._edited)
            self.fields[name] = box
            name_label = QLabel(label, self)
            name_label.setToolTip(_HINTS[name])
            name_label.setBuddy(box)
            form.addRow(name_label, box)
        top = QHBoxLayout()
        top.setSpacing(SPACE["s"])
        top.addWidget(self.preset_box, 1)
        top.addWidget(self.save_preset_button)
        sampling_head = QHBoxLayout()
        sampling_head.setContentsMargins(0, 0, 0, 0)
        sampling_head.addWidget(self._caption("Sampling"), 1)
        sampling_head.addWidget(self.reset_button)
        layout = QVBoxLayout(self)
        # Clear of the window's edge and the splitter; groups apart, each caption close
        # to what it names.
        layout.setContentsMargins(SPACE["l"], SPACE["m"], SPACE["l"], SPACE["m"])
        layout.setSpacing(SPACE["s"])
        layout.addWidget(self.title)
        layout.addSpacing(SPACE["xs"])
        layout.addWidget(self._caption("Preset"))
        layout.addLayout(top)
        layout.addSpacing(SPACE["m"])
        layout.addWidget(self._caption("System prompt"))
        layout.addWidget(self.system_prompt)
        layout.addSpacing(SPACE["m"])
        layout.addLayout(sampling_head)
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

    def _caption(self, text: str) -> QLabel:
        label = QLabel(text, self)
        label.setProperty("role", "muted")
        font = label.font()
        font.setWeight(font.Weight.DemiBold)
        label.setFont(font)
        return label

    # ------------------------------------------------------------------ values
    def reset_sampling(self) -> None:
        """Every sampling box back to "the worker's default" (saved after the pause)."""
        for box in self.fields.values():
            if isinstance(box, QDoubleSpinBox):
                box.setValue(box.minimum())
            else:
                box.setValue(box.minimum())

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
