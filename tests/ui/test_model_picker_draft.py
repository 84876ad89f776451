"""The fit chips count the draft model a model is loaded with.

A model whose Load-dialog choices name a draft model (speculative decoding) is judged,
in the top bar's model picker and in the Library, with that draft's memory on top, and
the chip's tooltip names it; choosing n-gram instead drops it from the judgement.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from hearth.config.paths import AppPaths
from hearth.hardware.fit import ContextPlan, FitVerdict, estimate_fit
from hearth.hardware.probe import RAM_RESERVE_BYTES, SystemMemory
from hearth.library.gguf_metadata import read_metadata
from hearth.ui.app_settings import SettingsStore
from hearth.ui.dialogs.load_choices import model_key
from hearth.ui.dialogs.load_dialog import LoadDialog
from hearth.ui.machine_speed import MachineSpeed
from hearth.ui.pages.library.page import LibraryPage
from hearth.ui.pages.library.rows import FIT_CONTEXT, estimates
from hearth.ui.pages.services import AppServices
from hearth.ui.shell.model_picker import ModelPicker
from hearth.ui.tasks import TaskSet
from hearth.ui.widgets.fit_chip import TIGHT_SHARE, ChipLevel, FitChip

pytestmark = pytest.mark.ui

GIB = 1 << 30
Setup = tuple[AppServices, SettingsStore, MachineSpeed, SystemMemory]


def machine_between(target: Path, draft: Path) -> SystemMemory:
    """A machine (no GPU) with RAM for the target alone, not tight, but not with its
    draft beside it."""
    meta = read_metadata(target)
    plan = ContextPlan(n_ctx=min(FIT_CONTEXT, meta.context_length or FIT_CONTEXT))
    big = SystemMemory(64 * GIB, 32 * GIB, 4, 8)
    alone = estimate_fit(meta, plan, big).ram_bytes
    both = estimate_fit(meta, plan, big, draft=read_metadata(draft)).ram_bytes
    room = int(alone / TIGHT_SHARE) + 1  # the least RAM in which the target alone isn't tight
    assert both > room, (alone, both)
    return SystemMemory(64 * GIB, RAM_RESERVE_BYTES + (room + both) // 2, 4, 8)


@pytest.fixture
def setup(spec_models: dict[str, Path], tmp_path: Path) -> Setup:
    system = machine_between(spec_models["target"], spec_models["draft"])
    services = AppServices(AppPaths(tmp_path / "data", tmp_path / "config").ensure(), system=system)
    for name in ("target", "draft"):
        services.library.import_in_place(spec_models[name])
    store = SettingsStore(tmp_path / "settings.json")
    return services, store, MachineSpeed(store, ram_bps=20e9), system


def choose_in_load_dialog(arun: Any, setup: Setup, target: Path, mode: str) -> None:
    """Open the Load dialog on ``target``, pick the speculation ``mode`` (with "draft",
    the best draft model) and accept it, as a person does: the choice is saved."""
    services, store, speed, system = setup
    dialog = LoadDialog(target, store, system=system, library=services.library, speed=speed)
    dialog.show()
    try:
        arun(arun.wait_until(lambda: dialog.meta is not None, 30, "the header"))
        arun(arun.wait_until(dialog.model_combo.fill_task.done, 30, "the library"))
        spec = dialog.spec
        spec.mode_combo.setCurrentIndex(spec.mode_combo.findData(mode))
        dialog.accept()
    finally:
        dialog.close()


def picker_chip(picker: ModelPicker, name: str) -> FitChip:
    names = [m.name for m in picker.models]
    chip = picker.chip(names.index(name))
    assert chip is not None
    return chip


def test_the_pickers_chip_counts_and_names_the_saved_draft(
    qtbot: QtBot, arun: Any, spec_models: dict[str, Path], setup: Setup
) -> None:
    services, store, _, _ = setup
    parent = QWidget()
    qtbot.addWidget(parent)
    # the store given outright (the app's picker finds it through the shared ``speed``)
    picker = ModelPicker(services, MachineSpeed(ram_bps=20e9), TaskSet(), parent, store=store)
    target, draft = spec_models["target"].name, spec_models["draft"].name

    arun(picker.open_list())  # nothing saved yet: the target alone fits
    chip = picker_chip(picker, target)
    assert chip.level is ChipLevel.GOOD and "draft" not in chip.toolTip()
    picker.reject()

    choose_in_load_dialog(arun, setup, spec_models["target"], "draft")
    arun(picker.open_list())
    chip = picker_chip(picker, target)
    assert chip.level is ChipLevel.BAD and chip.text() == "Won't fit"
    assert f"This includes the draft model {draft} (" in chip.toolTip()
    # the draft itself is judged alone: its own choices name no draft
    assert "includes the draft" not in picker_chip(picker, draft).toolTip()
    picker.reject()

    choose_in_load_dialog(arun, setup, spec_models["target"], "ngram")
    arun(picker.open_list())
    chip = picker_chip(picker, target)
    assert chip.level is ChipLevel.GOOD and "draft" not in chip.toolTip()
    picker.reject()


def test_the_librarys_chip_counts_the_saved_draft(
    qtbot: QtBot, arun: Any, spec_models: dict[str, Path], setup: Setup
) -> None:
    services, _, speed, _ = setup  # the page finds the saved choices through ``speed``
    choose_in_load_dialog(arun, setup, spec_models["target"], "draft")
    page = LibraryPage(services, TaskSet(), speed=speed, discover=list)
    qtbot.addWidget(page)
    page.resize(1300, 500)
    page.show()  # the first show lists the library and judges each model's fit
    target = next(m for m in services.library.models() if m.path == spec_models["target"])

    def chip() -> FitChip | None:
        model = page.model_named(target.name)
        return page.fit_chip(page.models.index(model)) if model in page.models else None

    def judged() -> bool:
        shown = chip()
        return shown is not None and shown.level is not ChipLevel.UNKNOWN

    arun(arun.wait_until(judged, 30, "the library's fit chips"))
    shown = chip()
    assert shown is not None and shown.level is ChipLevel.BAD
    assert f"This includes the draft model {spec_models['draft'].name} (" in shown.toolTip()
    assert FitVerdict.WONT_FIT.value in shown.toolTip().lower()


def test_garbled_saved_choices_leave_the_model_judged_alone(
    spec_models: dict[str, Path], setup: Setup
) -> None:
    services, store, _, system = setup
    target = spec_models["target"]
    store.settings.model_load_options[model_key(target)] = {
        "spec_mode": "warp-speed",  # no such mode: as if hand-edited
        "draft_model": str(spec_models["draft"]),
    }
    models = services.library.models()
    (fit,) = [est for m, est in zip(models, estimates(models, system, store), strict=True)
              if m.path == target]  # fmt: skip
    assert fit is not None and fit.draft_memory is None and fit.verdict is FitVerdict.CPU_ONLY
