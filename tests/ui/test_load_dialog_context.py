"""The Load dialog's context field: defaults within the trained context, and says so
next to the field when the user asks for more."""

from __future__ import annotations

from pathlib import Path

import pytest

import gguf_factory
from hearth.hardware import SystemMemory
from hearth.ui.app_settings import SettingsStore
from hearth.ui.dialogs.load_dialog import LoadDialog

pytestmark = pytest.mark.ui

GIB = 1 << 30


def test_context_past_the_trained_one_is_allowed_with_a_warning(arun, tmp_path: Path) -> None:
    model = gguf_factory.write_tiny_llama(
        tmp_path / "short-ctx-F16.gguf", spec=gguf_factory.LlamaSpec(context_length=1024)
    )
    store = SettingsStore(tmp_path / "settings.json")
    dialog = LoadDialog(model, store, system=SystemMemory(8 * GIB, 6 * GIB, 4, 8))
    dialog.show()

    async def scenario() -> None:
        await arun.wait_until(lambda: dialog.meta is not None, 30, "the header")

    try:
        arun(scenario())
        assert dialog.ctx_spin.value() == 1024  # min(4096, trained)
        assert dialog.ctx_warning.isHidden()
        dialog.ctx_spin.setValue(8192)
        assert dialog.ctx_spin.value() == 8192  # not clamped: the user may ask for more
        assert not dialog.ctx_warning.isHidden()
        assert "1,024" in dialog.ctx_warning.text()
        assert dialog.load_options().n_ctx == 8192
        dialog.ctx_spin.setValue(512)
        assert dialog.ctx_warning.isHidden()
    finally:
        dialog.close()
