"""The Library page: import in place, "found on this disk", delete, quantize."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtWidgets import QMessageBox, QPushButton
from pytestqt.qtbot import QtBot

from hearth.core.model_info import LoadConfig
from hearth.engine.model import LlamaModel
from hearth.library import DiscoveredModel, ModelSource, read_metadata
from hearth.library.quantize_job import JobState
from hearth.ui.pages.library.page import COLUMNS, LibraryPage
from hearth.ui.pages.services import AppServices
from hearth.ui.tasks import TaskSet
from hearth.ui.widgets.fit_chip import ChipLevel

pytestmark = pytest.mark.ui


def test_import_delete_and_quantize(
    qtbot: QtBot, arun, tmp_path: Path, tiny_model_f16: Path, tiny_model_q4km: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    f16 = Path(shutil.copy(tiny_model_f16, elsewhere / "hearth-tiny-F16.gguf"))
    other_app = DiscoveredModel("lmstudio", "someone/tiny/q4.gguf", (tiny_model_q4km,),
                                tiny_model_q4km.stat().st_size)  # fmt: skip
    services = AppServices()
    page = LibraryPage(services, TaskSet(), discover=lambda: [other_app])
    qtbot.addWidget(page)
    page.resize(1000, 600)
    page.show()  # the first show lists the library and scans the disk
    loaded: list[Path] = []
    page.load_requested.connect(loaded.append)

    async def scenario() -> None:
        await arun.wait_until(lambda: page.found_table.rowCount() == 1, 20, "found on disk")
        assert page.status.text() == "No models yet."

        # Import a file in place: listed with its metadata; the file stays where it is.
        await page.import_file(f16)
        model = page.model_named("hearth-tiny-F16.gguf")
        assert model is not None and model.source is ModelSource.IMPORTED
        cells = [page.table.item(0, c).text() for c in range(8)]
        assert cells[1] == "F16" and cells[5] == "llama" and cells[6] == "Imported"
        assert cells[7] == ""  # no problem
        assert page.folder_url(model).toLocalFile() == str(elsewhere)

        # Import what another app has ("found on this disk"): then it leaves that list.
        page.found_table.cellWidget(0, 4).findChild(QPushButton).click()
        await arun.wait_until(lambda: len(page.models) == 2, 20, "the second import")
        await arun.wait_until(lambda: page.found_table.rowCount() == 0, 20, "found list")
        found = page.model_named("someone/tiny/q4.gguf")
        assert found is not None and found.origin == "lmstudio"

        # Quantize the F16 from the page: progress, then a new model in Hearth's folder.
        page.table.selectRow(page.models.index(model))
        page.quantize.type_combo.setCurrentText("Q8_0")
        page.quantize.start_button.click()
        job = page.quantize.job
        assert job is not None and page.quantize.cancel_button.isVisible()
        await arun.wait_until(lambda: job.state is not JobState.RUNNING, 120, "quantizing")
        assert job.state is JobState.DONE, (job.error, job.stderr_tail())
        await arun.wait_until(lambda: len(page.models) == 3, 20, "the quantized model")
        quantized = next(m for m in page.models if m.source is ModelSource.HEARTH)
        assert quantized.path == services.paths.models_dir / "quantized" / "hearth-tiny-Q8_0.gguf"
        assert quantized.metadata is not None and quantized.metadata.quantization == "Q8_0"
        assert "Done" in page.quantize.status.text() and not page.quantize.bar.isVisible()
        page.load_model(quantized)
        assert loaded == [quantized.path]

        # Delete asks first: "No" keeps it; confirmed, an import is only forgotten.
        monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.No)
        assert page.delete_model(model) is None
        await page.delete_model(model, confirmed=True)
        assert page.model_named("hearth-tiny-F16.gguf") is None
        assert f16.exists()  # noqa: ASYNC240 - a stat in a test
        # Hearth's own file is deleted from disk.
        await page.delete_model(quantized, confirmed=True)
        assert not quantized.path.exists() and len(page.models) == 1

    arun(scenario())


def test_quantized_file_from_the_page_loads(qtbot: QtBot, arun, tiny_model_f16: Path) -> None:
    services = AppServices()
    page = LibraryPage(services, TaskSet(), discover=list)
    qtbot.addWidget(page)

    async def scenario() -> Path:
        await page.import_file(tiny_model_f16)
        model = page.model_named("hearth-tiny-F16.gguf")
        assert model is not None
        job = page.quantize_model(model, "Q4_K_M")
        assert job is not None
        await arun.wait_until(lambda: job.state is not JobState.RUNNING, 120, "quantizing")
        assert job.state is JobState.DONE, job.error
        return job.dst

    dst = arun(scenario())
    assert read_metadata(dst).quantization == "Q4_K_M"
    llama = LlamaModel(LoadConfig(model_path=dst, n_ctx=256, n_parallel=1))
    try:
        assert llama.tokenize("hello", add_special=True, parse_special=False)
    finally:
        llama.close()


def test_load_opens_the_load_dialog_which_switches_models(
    qtbot: QtBot, arun, tmp_path: Path, tiny_model_q8: Path, tiny_model_f16: Path
) -> None:
    from hearth.ui.shell.main_window import MainWindow

    window = MainWindow(log_dir=tmp_path / "logs", chats_db=tmp_path / "chats.db")
    qtbot.addWidget(window)
    window.show()
    library = window.library_page

    async def scenario() -> None:
        await library.import_file(tiny_model_q8)
        await library.import_file(tiny_model_f16)
        q8 = library.model_named(tiny_model_q8.name)
        f16 = library.model_named(tiny_model_f16.name)
        assert q8 is not None and f16 is not None
        row = library.models.index(q8)
        load = library.table.cellWidget(row, len(COLUMNS) - 1).findChild(QPushButton)
        chip = library.fit_chip(row)  # judged for this machine, with a speed estimate
        assert chip is not None and chip.level is not ChipLevel.UNKNOWN, chip.text()
        assert "tok/s" in chip.text()
        assert load.text() == "Load"
        load.click()
        dialog = window.extras.load_dialog
        assert dialog is not None and dialog.isVisible()  # the dialog, not a direct load
        assert window.supervisor.process is None
        assert dialog.model_path == tiny_model_q8
        await dialog.info_task
        assert dialog.meta is not None and dialog.meta.quantization == "Q8_0"
        q8_estimate = dialog.estimate_label.text()
        assert "Estimated speed here: ~" in q8_estimate and "tok/s" in q8_estimate
        await dialog.model_combo.fill_task
        assert sorted(p.name for p in dialog.model_combo.paths()) == sorted(
            [tiny_model_q8.name, tiny_model_f16.name]
        )
        dialog.ctx_spin.setValue(2048)  # an unsaved change, for Q8 only
        dialog.model_combo.choose(f16.path)
        assert dialog.windowTitle() == f"Load {tiny_model_f16.name}"
        assert dialog.meta is None and dialog.ctx_spin.value() == 4096  # its own defaults
        await dialog.info_task
        assert dialog.meta is not None and dialog.meta.quantization == "F16"
        assert dialog.estimate_label.text() != q8_estimate  # the estimate followed
        assert dialog.load_options().n_ctx == min(4096, dialog.meta.context_length or 4096)
        dialog.reject()
        assert window.supervisor.process is None

    arun(scenario())
    window.close()


def test_a_narrow_page_keeps_what_the_user_acts_on_in_view(
    qtbot: QtBot, arun, tiny_model_q8: Path
) -> None:
    from hearth.ui.pages.library.rows import COL_FIT, NARROW_HIDDEN

    page = LibraryPage(AppServices(), TaskSet(), discover=lambda: [])
    qtbot.addWidget(page)
    page.resize(800, 500)  # a 900x650 window less the rail
    page.show()

    async def scenario() -> None:
        await page.import_file(tiny_model_q8)
        chip = page.fit_chip(0)
        await arun.wait_until(lambda: chip is not None and chip.text() != "", 20, "fit chip")

    arun(scenario())
    assert all(page.table.isColumnHidden(col) for col in NARROW_HIDDEN)
    assert "Params: 1.4M" in page.table.item(0, 0).toolTip()  # what they showed is kept
    qtbot.waitUntil(lambda: page.table.horizontalScrollBar().maximum() == 0)  # Load in view
    chip = page.fit_chip(0)
    assert chip is not None and page.table.columnWidth(COL_FIT) >= chip.sizeHint().width()
    page.resize(1300, 700)
    qtbot.waitUntil(lambda: not any(page.table.isColumnHidden(c) for c in NARROW_HIDDEN))
