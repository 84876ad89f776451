"""The Load dialog's vision projector (issue 23: "The Load dialog can pick one by hand").

- the Vision row shows the projector paired beside the model, offers the library's
  projectors as wide as the model (not another model's), and "None";
- "Choose file…" (Qt's file dialog) checks the file off the Qt thread: a text model or
  another model's projector is refused in the note, and the choice stays;
- the projector's weights count in the estimate;
- the choice is saved with the model's choices and is what the worker gets: a real
  worker says ``vision`` on ``/v1/models`` with a projector chosen, and not with None.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QFileDialog

import gguf_projector
from hearth.library.library import Library
from hearth.supervisor import LoadOptions, Supervisor
from hearth.ui.app_settings import SettingsStore
from hearth.ui.dialogs.load_dialog import LoadDialog, saved_load_options
from hearth.ui.dialogs.load_vision import NO_VISION, PAIRED
from load_dialogs import open_load_dialog

pytestmark = pytest.mark.ui


@pytest.fixture
def vision(tiny_model_f16: Path, tiny_projector: Path, tmp_path: Path) -> dict[str, Path]:
    """A vision model with its projector beside it; in the library besides: another
    projector of its width, one of another model's width, and a text model."""
    folder = tmp_path / "tiny-vision"
    folder.mkdir()
    model = folder / "tiny-vision-F16.gguf"
    shutil.copy(tiny_model_f16, model)
    shutil.copy(tiny_projector, folder / "mmproj-F16.gguf")
    other = tmp_path / "spare"
    other.mkdir()
    spare = gguf_projector.write_projector(other / "mmproj-spare-F16.gguf", seed=3)
    narrow = gguf_projector.write_projector(
        other / "mmproj-narrow-F16.gguf", gguf_projector.ProjectorSpec(text_n_embd=128)
    )
    lib = Library()
    for path in (model, spare, narrow):
        lib.import_in_place(path)
    return {"model": model, "paired": folder / "mmproj-F16.gguf", "spare": spare,
            "narrow": narrow, "text": tiny_model_f16}  # fmt: skip


def _open(arun: Any, model: Path, store: SettingsStore) -> LoadDialog:
    dialog = open_load_dialog(arun, model, store)
    arun(arun.wait_until(lambda: dialog.vision.looked, 30, "the pair"))
    return dialog


def _choices(dialog: LoadDialog) -> list[object]:
    combo = dialog.vision.combo
    return [combo.itemData(i) for i in range(combo.count())]


def test_the_row_shows_the_pair_offers_the_library_and_checks_a_file(
    arun: Any, vision: dict[str, Path], tmp_path: Path
) -> None:
    store = SettingsStore(tmp_path / "settings.json")
    dialog = _open(arun, vision["model"], store)
    section = dialog.vision
    try:
        assert section.combo.itemText(0) == "mmproj-F16.gguf (beside the model)"
        # the library's projector of this width is offered; the narrow one is not
        assert _choices(dialog) == [PAIRED, str(vision["spare"]), NO_VISION]
        assert "mmproj-F16.gguf (gemma3, 256-wide" in section.note.text()
        assert dialog.load_options().mmproj is None and dialog.load_options().vision
        # the estimate counts the projector's weights
        paired_bytes = section.projector_bytes()
        assert 0 < paired_bytes <= vision["paired"].stat().st_size
        assert f"Vision {_size(paired_bytes)}" in dialog.summary.breakdown_text()

        # a text model picked as the projector: refused in the note, the choice stays
        arun(section.use_file(vision["text"]))
        assert "not a vision projector" in section.note.text()
        assert section.note.tone == "danger"
        assert section.combo.currentData() == PAIRED
        # another model's projector (128-wide): refused, naming both widths
        arun(section.use_file(vision["narrow"]))
        assert "makes 128-wide embeddings" in section.note.text()
        assert "reads 256-wide ones" in section.note.text()
        assert section.combo.currentData() == PAIRED

        # Choose file… with Qt's own dialog: a projector of this width is chosen
        picker = section.choose_file()
        picker.setOption(QFileDialog.Option.DontUseNativeDialog, True)
        picker.selectFile(str(vision["spare"]))
        picker.accept()
        arun(arun.wait_until(lambda: section.combo.currentData() == str(vision["spare"]), 30,
                             "the file checked"))  # fmt: skip
        assert section.note.tone == "muted"
        assert dialog.load_options().mmproj == str(vision["spare"])

        # None: no projector, nothing in the estimate for it
        section.combo.setCurrentIndex(section.combo.findData(NO_VISION))
        assert section.projector_bytes() == 0
        assert "Vision" not in dialog.summary.breakdown_text()
        assert not dialog.load_options().vision
        dialog.accept()
    finally:
        dialog.close()
    saved = saved_load_options(store, vision["model"])
    assert saved is not None and saved.vision is False

    again = _open(arun, vision["model"], store)  # reopened: None is kept
    try:
        assert again.vision.combo.currentData() == NO_VISION
    finally:
        again.close()


def _size(n: int) -> str:
    from hearth.core.units import format_bytes

    return format_bytes(n)


def test_the_choice_is_what_the_worker_gets(
    arun: Any, vision: dict[str, Path], tmp_path: Path
) -> None:
    """The worker's launch settings for each choice, and two real workers: one with a
    projector chosen by hand sees images, one loaded with None does not."""
    supervisor = Supervisor(log_dir=tmp_path / "logs")
    supervisor.model_path = vision["model"]
    for options, expected in (
        (LoadOptions(), vision["paired"]),
        (LoadOptions(mmproj=str(vision["spare"])), vision["spare"]),
        (LoadOptions(vision=False), None),
    ):
        supervisor.options = options
        assert supervisor.launch_settings().load.mmproj_path == expected

    store = SettingsStore(tmp_path / "settings.json")
    dialog = _open(arun, vision["model"], store)
    arun(dialog.vision.use_file(vision["spare"]))
    chosen = dialog.load_options()
    dialog.close()

    async def seen(options: LoadOptions) -> bool:
        await supervisor.start(vision["model"], replace(options, n_ctx=512, n_parallel=1))
        assert supervisor.client is not None
        (model,) = await supervisor.client.model_meta()  # GET /v1/models
        await supervisor.stop()
        return model.vision

    assert chosen.mmproj == str(vision["spare"])
    assert arun(seen(chosen), timeout=240) is True
    assert "mmproj-spare-F16.gguf" in "\n".join(
        p.read_text(errors="replace") for p in (tmp_path / "logs").glob("*")
    )
    assert arun(seen(LoadOptions(vision=False)), timeout=240) is False
