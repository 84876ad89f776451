"""The Load dialog's speed estimate with a draft model: the plain estimate, said to be
without speculation, plus only the ceiling the two models' costs allow, with its basis
and the measured gains in the tooltip."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from hearth.library.library import Library
from hearth.ui.app_settings import SettingsStore
from hearth.ui.dialogs.load_dialog import LoadDialog
from hearth.ui.dialogs.load_speculation import speed_note
from hearth.ui.machine_speed import MachineSpeed
from load_dialogs import MACHINE

pytestmark = pytest.mark.ui


def ceiling_in(text: str) -> float:
    found = re.search(r"at most ([\d.]+)x", text)
    assert found, text
    return float(found.group(1))


def test_a_draft_adds_its_ceiling_and_says_on_what_basis(
    arun: Any, spec_models: dict[str, Path], tmp_path: Path
) -> None:
    library = Library()
    for name in ("target", "draft"):
        library.import_in_place(spec_models[name])
    store = SettingsStore(tmp_path / "settings.json")
    dialog = LoadDialog(spec_models["target"], store, system=MACHINE, library=library,
                        speed=MachineSpeed(ram_bps=20e9))  # fmt: skip
    dialog.show()
    try:
        arun(arun.wait_until(lambda: dialog.bandwidth is not None, 30, "the estimate"))
        arun(arun.wait_until(dialog.model_combo.fill_task.done, 30, "the library"))
        plain = dialog.estimate_label.text().splitlines()[-1]
        assert re.fullmatch(r"Estimated speed here: ~[\d,.]+ tok/s\.", plain), plain
        assert dialog.estimate_label.toolTip() == ""

        spec = dialog.spec
        spec.mode_combo.setCurrentIndex(spec.mode_combo.findData("draft"))
        assert spec.draft_path() == spec_models["draft"]
        line = dialog.estimate_label.text().splitlines()[-1]
        # the same plain number, now said to be without speculation
        assert line.startswith(plain.removesuffix(".") + " without speculation")
        ceiling = ceiling_in(line)
        # the 2-block draft is cheaper than the 16-block target; no step beats k + 1
        assert 1.1 <= ceiling < spec.max_spin.value() + 1
        tip = dialog.estimate_label.toolTip()
        assert "Basis:" in tip and "ceiling" in tip and "docs/benchmarks.md" in tip

        spec.max_spin.setValue(2)  # fewer drafted tokens per step: a lower ceiling
        lower = ceiling_in(dialog.estimate_label.text())
        assert 1.0 < lower < ceiling and lower <= 3.0, dialog.estimate_label.text()

        spec.mode_combo.setCurrentIndex(spec.mode_combo.findData("ngram"))
        assert dialog.estimate_label.text().splitlines()[-1] == plain
        assert dialog.estimate_label.toolTip() == ""
    finally:
        dialog.close()


def test_a_draft_as_costly_as_the_model_is_said_not_to_help() -> None:
    line, tip = speed_note(40.0, 40.0, 16)
    assert "too large to make this model faster" in line and "at most" not in line
    assert "100%" in line and "Basis:" in tip
    assert speed_note(40.0, None, 16) == ("Estimated speed here: ~40 tok/s.", "")
