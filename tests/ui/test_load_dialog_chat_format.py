"""The Load dialog's "Chat format" combo: "Detect" names what the template points to,
a chosen format is saved per model and reaches the worker as ``--chat-format``."""

from __future__ import annotations

from pathlib import Path

import pytest

import gguf_factory
from hearth.config.launch import LaunchSettings
from hearth.core.model_info import CHAT_FORMATS, LoadConfig
from hearth.hardware import SystemMemory
from hearth.ui.app_settings import SettingsStore
from hearth.ui.dialogs.load_dialog import LoadDialog, saved_load_options

pytestmark = pytest.mark.ui

GIB = 1 << 30
# Qwen3-Coder's call syntax, as its template writes it: detection reads qwen3_coder.
CODER_TEMPLATE = gguf_factory.CHATML_TEMPLATE + (
    "{%- if tools %}<tool_call>\n<function=example>\n</function>\n</tool_call>{% endif %}"
)


def _dialog(model: Path, store: SettingsStore) -> LoadDialog:
    dialog = LoadDialog(model, store, system=SystemMemory(8 * GIB, 6 * GIB, 4, 8))
    dialog.show()
    return dialog


def test_chat_format_detects_or_is_chosen_and_remembered(arun, tmp_path: Path) -> None:
    model = gguf_factory.write_tiny_llama(tmp_path / "coder-F16.gguf",
                                          chat_template=CODER_TEMPLATE)  # fmt: skip
    store = SettingsStore(tmp_path / "settings.json")
    dialog = _dialog(model, store)
    combo = dialog.format_combo
    try:
        arun(arun.wait_until(lambda: dialog.meta is not None, 30, "the header"))
        assert combo.itemText(0) == "Detect (qwen3_coder)"
        assert [combo.itemText(i) for i in range(1, combo.count())] == list(CHAT_FORMATS)
        assert dialog.load_options().chat_format is None

        combo.setCurrentIndex(combo.findText("glm"))
        assert dialog.load_options().chat_format == "glm"
        dialog.accept()
    finally:
        dialog.close()

    saved = saved_load_options(store, model)
    assert saved is not None and saved.chat_format == "glm"
    load = saved.apply(LoadConfig(model_path=model))
    argv = LaunchSettings(load=load).to_argv()
    assert argv[argv.index("--chat-format") + 1] == "glm"

    plain = gguf_factory.write_tiny_llama(tmp_path / "plain-F16.gguf")
    again = _dialog(model, store)  # the choice comes back for this model
    try:
        assert again.format_combo.currentText() == "glm"
        again.switch_model(plain)  # another model: its own detection, its own choice
        assert again.format_combo.currentText() == "Detect"
        arun(arun.wait_until(lambda: again.meta is not None, 30, "the other header"))
        assert again.format_combo.currentText() == "Detect (hermes)"
        assert again.load_options().chat_format is None
        again.switch_model(model)
        assert again.format_combo.currentText() == "glm"
        again.format_combo.setCurrentIndex(0)  # back to detection
        again.accept()
    finally:
        again.close()
    saved = saved_load_options(store, model)
    assert saved is not None and saved.chat_format is None
    assert "--chat-format" not in LaunchSettings(load=saved.apply(LoadConfig(model))).to_argv()
