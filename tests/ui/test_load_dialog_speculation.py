"""The Load dialog's speculative decoding, remote models and the CPU-build notice.

- the draft-model picker lists library models, the same vocabulary first and smallest
  first; a draft adds its memory to the estimate and travels to the worker's argv;
- a draft whose header shows another vocabulary is refused on the spot, naming both;
- n-gram needs no draft model;
- a remote model (``engine/model``) shows no memory controls, and says why;
- a GPU with a CPU-only llama.cpp build is said, with the command that rebuilds it.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

import gguf_factory as gf
from hearth.config.engines import EngineRegistry
from hearth.config.launch import LaunchSettings
from hearth.core.model_info import LoadConfig, SpecMode
from hearth.hardware import GpuInfo, SystemMemory
from hearth.library.gguf_metadata import GgufMetadata, read_metadata
from hearth.library.library import Library
from hearth.supervisor import LoadOptions, WorkerState
from hearth.supervisor.backend_probe import BackendProbe
from hearth.ui.app_settings import SettingsStore
from hearth.ui.dialogs.load_dialog import LoadDialog, saved_load_options
from hearth.ui.dialogs.load_errors import plain_load_error
from hearth.ui.dialogs.load_speculation import vocab_mismatch
from hearth.ui.shell.main_window import MainWindow
from hearth.ui.style.theme import apply_theme
from load_dialogs import GIB, MACHINE, open_load_dialog

pytestmark = pytest.mark.ui

SHOTS_ENV = "HEARTH_SHOTS_DIR"  # set it to keep the screenshots (tests write tmp_path)


@pytest.fixture
def library(spec_models: dict[str, Path], tmp_path: Path) -> dict[str, Path]:
    """The spec pair, an unrelated draft and a model with a much smaller vocabulary
    (another tokenizer, as far as its header tells), all in the library."""
    controls = gf.VOCAB.tokens[gf.IM_START_ID : gf.FIRST_NORMAL_ID]
    small = gf.make_vocab(controls, gf.VOCAB.tokens[gf.FIRST_NORMAL_ID : gf.FIRST_NORMAL_ID + 60])
    other = gf.write_llama(tmp_path / "other-tokenizer-F16.gguf", gf.LlamaSpec(), small,
                           name="Other tokenizer")  # fmt: skip
    lib = Library()
    for path in (*spec_models.values(), other):
        lib.import_in_place(path)
    return {**spec_models, "other": other}


def test_draft_picker_estimate_refusal_and_the_worker_argv(
    arun: Any, library: dict[str, Path], tmp_path: Path
) -> None:
    store = SettingsStore(tmp_path / "settings.json")
    dialog = open_load_dialog(arun, library["target"], store)
    spec = dialog.spec
    try:
        assert spec.mode() is SpecMode.OFF and spec.draft_combo.isEnabled() is False
        # compatible first, smallest first; the other tokenizer last, marked
        paths = [Path(spec.draft_combo.itemData(i)) for i in range(spec.draft_combo.count())]
        assert library["target"] not in paths
        assert paths[-1] == library["other"]
        assert "other vocabulary" in spec.draft_combo.itemText(len(paths) - 1)
        sizes = [os.path.getsize(p) for p in paths[:-1]]
        assert sizes == sorted(sizes) and paths[0] == library["draft"]

        off_ram = dialog.placement().ram_bytes  # type: ignore[union-attr]
        spec.mode_combo.setCurrentIndex(spec.mode_combo.findData("draft"))
        assert spec.draft_path() == library["draft"]  # the best candidate, preselected
        assert "Draft model: weights" in dialog.summary.breakdown_text()
        draft_mem = dialog.draft_memory()
        assert draft_mem is not None and draft_mem.kv_cache_bytes > 0
        assert dialog.placement().ram_bytes == off_ram + draft_mem.total_bytes  # type: ignore[union-attr]
        assert dialog.load_button.isEnabled()

        # another tokenizer: refused here, with both names and what to do
        spec.draft_combo.setCurrentIndex(len(paths) - 1)
        assert not dialog.load_button.isEnabled()
        note = spec.note.text()
        assert "other-tokenizer-F16.gguf" in note and "target-Q8_0.gguf" in note
        assert (
            "vocabulary" in note and "Draft model: weights" not in dialog.summary.breakdown_text()
        )

        spec.draft_combo.setCurrentIndex(0)
        spec.max_spin.setValue(8)
        options = dialog.load_options()
        assert (options.spec_mode, options.draft_model, options.draft_max) == (
            "draft", str(library["draft"]), 8,
        )  # fmt: skip
        dialog.accept()
    finally:
        dialog.close()

    saved = saved_load_options(store, library["target"])
    assert saved is not None and saved.draft_model == str(library["draft"])
    argv = LaunchSettings(load=saved.apply(LoadConfig(model_path=library["target"]))).to_argv()
    assert argv[argv.index("--draft-model") + 1] == str(library["draft"])
    assert argv[argv.index("--spec") + 1] == "draft"
    assert argv[argv.index("--draft-max") + 1] == "8"

    again = open_load_dialog(arun, library["target"], store)  # the choice comes back
    try:
        assert again.spec.mode() is SpecMode.DRAFT
        assert again.spec.draft_path() == library["draft"]
        again.spec.mode_combo.setCurrentIndex(again.spec.mode_combo.findData("ngram"))
        ngram = again.load_options()
        assert (ngram.spec_mode, ngram.draft_model) == ("ngram", None)
        assert "Draft model: weights" not in again.summary.breakdown_text()
        load = ngram.apply(LoadConfig(model_path=library["target"]))
        assert load.speculation is SpecMode.NGRAM and load.draft_model_path is None
        assert load.problems() == []
    finally:
        again.close()
    gpu = GpuInfo("NVIDIA GeForce RTX 4070", 12 * GIB, 11 * GIB, "cuda")  # for the picture
    shown = open_load_dialog(
        arun, library["target"], store, system=SystemMemory(32 * GIB, 20 * GIB, 8, 16, (gpu,))
    )
    try:
        _screenshots(shown, Path(os.environ.get(SHOTS_ENV) or tmp_path))
    finally:
        shown.close()


def _screenshots(dialog: LoadDialog, folder: Path) -> None:
    """The dialog with the draft picker open on a draft, in both themes."""
    spec = dialog.spec
    spec.mode_combo.setCurrentIndex(spec.mode_combo.findData("draft"))
    spec.draft_combo.setCurrentIndex(0)
    assert dialog.auto_fit() == dialog.gpu_slider.maximum()  # the draft fits beside it too
    assert "all layers on the GPU" in dialog.estimate_label.text()
    folder.mkdir(parents=True, exist_ok=True)
    for theme in ("light", "dark"):
        apply_theme(theme)
        QApplication.processEvents()
        dialog.resize(560, dialog.layout().totalHeightForWidth(560))  # type: ignore[union-attr]
        QApplication.processEvents()
        assert dialog.grab().save(str(folder / f"load_dialog_{theme}.png"))


def test_the_workers_own_vocabulary_refusal_is_worded_plainly() -> None:
    message = (
        "The draft model mismatched-Q8_0.gguf cannot draft for target-Q8_0.gguf: token 264 "
        "is 'a' in one and 'b' in the other. Pick a draft model of the same family."
    )
    text = plain_load_error(message)
    assert text.startswith("The draft model can't draft for this model")
    assert "N-gram" in text and "mismatched-Q8_0.gguf" in text  # the details stay


def test_a_remote_model_shows_no_memory_controls(
    arun: Any, library: dict[str, Path], tmp_path: Path
) -> None:
    registry = EngineRegistry()
    registry.add("gpu-box", "http://127.0.0.1:9")
    store = SettingsStore(tmp_path / "settings.json")
    dialog = LoadDialog("gpu-box/qwen3-32b", store, system=MACHINE, engines=registry)
    dialog.show()
    try:
        arun(arun.wait_until(dialog.model_combo.fill_task.done, 30, "the library"))
        assert dialog.remote_model == "gpu-box/qwen3-32b"
        assert dialog.model_combo.currentText() == "gpu-box/qwen3-32b"
        assert dialog.form.isHidden() and not dialog.spec.mode_combo.isVisible()
        assert dialog.estimate_label.isHidden()
        note = dialog.remote_label.text()
        assert not dialog.remote_label.isHidden()
        assert "gpu-box" in note and "http://127.0.0.1:9" in note and "memory" in note
        assert dialog.load_button.text() == "Use" and dialog.load_button.isEnabled()
        assert dialog.load_options() == LoadOptions()

        dialog.model_combo.choose(library["draft"])  # a local model: the knobs are back
        arun(arun.wait_until(lambda: dialog.meta is not None, 30, "the header"))
        assert dialog.remote_model is None and not dialog.form.isHidden()
        assert dialog.remote_label.isHidden() and dialog.load_button.text() == "Load"
        assert "Weights" in dialog.summary.breakdown_text()
    finally:
        dialog.close()
    # a remote model's "choices" are not saved as a local model's
    assert not any("qwen3-32b" in key for key in store.settings.model_load_options)


def test_a_gpu_with_a_cpu_only_build_is_explained(
    arun: Any, tiny_model_q8: Path, tmp_path: Path
) -> None:
    backend = BackendProbe()  # the real llama.cpp of this install, asked of a child
    if backend.report().gpu_offload:
        pytest.skip("this llama.cpp build offloads: there is nothing to explain")
    gpu = GpuInfo("NVIDIA Test GPU", 8 * GIB, 8 * GIB, "cuda")
    store = SettingsStore(tmp_path / "settings.json")
    system = SystemMemory(8 * GIB, 6 * GIB, 4, 8, (gpu,))
    dialog = open_load_dialog(arun, tiny_model_q8, store, system=system, backend=backend)
    try:
        assert not dialog.offload_label.isHidden()
        text = dialog.offload_label.text()
        assert "NVIDIA Test GPU" in text and "HEARTH_BACKEND=cuda bash scripts/bootstrap" in text
        # the estimate is the CPU's, as the worker will run it
        assert dialog.system is not None and dialog.system.gpus == ()
        assert dialog.gpu_slider.value() == 0 and not dialog.gpu_slider.isEnabled()
        assert "No GPU found" not in dialog.info_label.text()
    finally:
        dialog.close()
    plain = open_load_dialog(
        arun, tiny_model_q8, SettingsStore(tmp_path / "s2.json"), backend=backend
    )
    try:  # no GPU on the machine: nothing to say
        assert plain.offload_label.isHidden()
    finally:
        plain.close()


def test_the_workers_vocabulary_refusal_reaches_the_window(
    qtbot: QtBot, arun: Any, spec_models: dict[str, Path], tmp_path: Path
) -> None:
    """Same size, same special tokens, other token texts: only the worker's token by
    token check can tell, and its refusal is shown in plain words, naming both."""
    window = MainWindow(log_dir=tmp_path / "logs", chats_db=tmp_path / "chats.db")
    qtbot.addWidget(window)
    window.show()
    options = LoadOptions(n_ctx=512, n_parallel=1, spec_mode="draft",
                          draft_model=str(spec_models["mismatched"]))  # fmt: skip

    async def scenario() -> None:
        window.open_model(spec_models["target"], options)
        await arun.wait_until(
            lambda: (
                window.supervisor.status.state in (WorkerState.READY, WorkerState.ERROR)
                and not window.loading
            ),
            120,
            "the load to fail",
        )

    arun(scenario())
    assert window.supervisor.status.state is WorkerState.ERROR
    shown = window.extras.plain_error(window.supervisor.status) or ""
    assert shown.startswith("The draft model can't draft for this model")
    assert "mismatched-Q8_0.gguf" in shown and "target-Q8_0.gguf" in shown
    assert "can't draft for this model" in window.banner_label.text()  # what the user sees


def test_header_checks_name_what_differs(spec_models: dict[str, Path]) -> None:
    target = read_metadata(spec_models["target"])
    draft = read_metadata(spec_models["draft"])
    assert vocab_mismatch(target, draft) is None
    # the same-size vocabulary with other token texts passes here: the worker decides
    assert vocab_mismatch(target, read_metadata(spec_models["mismatched"])) is None

    def changed(key: str, value: object) -> GgufMetadata:
        return replace(draft, kv={**draft.kv, key: value})

    assert "different kinds" in (
        vocab_mismatch(target, changed("tokenizer.ggml.model", "gpt2")) or ""
    )
    assert "end-of-text" in (
        vocab_mismatch(target, changed("tokenizer.ggml.eos_token_id", 7)) or ""
    )
    assert "beginning-of-text" in (
        vocab_mismatch(target, changed("tokenizer.ggml.bos_token_id", 7)) or ""
    )
    size = target.vocab_size or 0
    assert vocab_mismatch(target, replace(draft, vocab_size=size + 100)) is None  # padding
    assert "tokens" in (vocab_mismatch(target, replace(draft, vocab_size=size + 200)) or "")
