"""The top bar's chips and the Load dialog's line about the loaded models, from plain
``LoadedModel`` values: what each says (memory, busy slots, pinned or expiring), the
chat's model outlined, Eject and "Chat with this model" naming their model, both
themes; and the chat's choice among loaded models when one is ejected."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from hearth.core.model_info import ModelInfo
from hearth.core.prompt_cache import GIB
from hearth.core.residency import LoadedModel, ResidencyLimits
from hearth.supervisor import Supervisor, WorkerState, WorkerStatus
from hearth.ui.chat.model import ChatModel
from hearth.ui.dialogs.load_residents import beside_words
from hearth.ui.shell.model_bar import LOAD_ANOTHER, ModelBar
from hearth.ui.shell.model_chips import ModelChips, chip_details, stay_words
from hearth.ui.style.theme import apply_theme, tokens_for

pytestmark = pytest.mark.ui

NOW = 1_000_000.0


def loaded(name: str, memory: int, *, busy: int = 0, pinned: bool = True,
           expires_in: float | None = None) -> LoadedModel:  # fmt: skip
    info = ModelInfo(
        id=name, path=Path(f"/models/{name}.gguf"), architecture="llama", n_params=1,
        size_bytes=memory, quantization="Q8_0", n_ctx_train=4096, n_ctx_per_slot=1024,
        n_slots=4, n_vocab=256, chat_template=None, has_fim=False, created=0,
    )  # fmt: skip
    expires = None if expires_in is None else NOW + expires_in
    return LoadedModel(info, memory, busy, pinned, expires)


def test_chip_words() -> None:
    chat = loaded("chat", 3 * GIB // 2, busy=1)
    jit = loaded("coder", GIB, pinned=False, expires_in=530)
    assert chip_details(chat, NOW) == "1.5 GiB · 1 busy · pinned"
    assert chip_details(jit, NOW) == "1.0 GiB · 9m"
    assert stay_words(jit, NOW) == "expires in 9m" and stay_words(chat, NOW) == "pinned"


def test_chips_in_the_bar_each_with_its_eject(qtbot: QtBot) -> None:
    bar = ModelBar(tokens_for(qtbot_palette()))
    qtbot.addWidget(bar)
    bar.resize(1000, 48)
    bar.show()
    bar.set_status(WorkerStatus(WorkerState.READY, model="chat"))
    models = [loaded("chat", GIB, busy=2), loaded("coder", GIB // 2, pinned=False, expires_in=60)]
    bar.set_loaded(models, "coder", NOW)
    assert list(bar.chips.chips) == ["chat", "coder"]
    assert bar.chips.texts() == ["chat  ·  1.0 GiB · 2 busy · pinned", "coder  ·  512.0 MiB · 1m"]
    assert bar.chips.chips["coder"].current and not bar.chips.chips["chat"].current
    assert bar.picker_button.text() == LOAD_ANOTHER and not bar.eject_button.isVisible()
    tip = bar.chips.chips["chat"].button.toolTip()
    assert "2 of 4 slots busy" in tip and "Pinned: stays until you eject it" in tip
    ejected: list[str] = []
    used: list[str] = []
    bar.eject_model.connect(ejected.append)
    bar.use_model.connect(used.append)
    bar.chips.chips["chat"].eject_button.click()
    menu = bar.chips.chips["chat"].menu
    next(a for a in menu.actions() if a.text() == "Chat with this model").trigger()
    assert ejected == ["chat"] and used == ["chat"]

    bar.set_loaded(models[:1], "chat", NOW)  # "coder" ejected
    assert list(bar.chips.chips) == ["chat"] and bar.chips.chips["chat"].current
    bar.set_loaded([], None, NOW)
    assert not bar.chips.isVisible() and bar.eject_button.isVisible()
    assert bar.picker_button.text().startswith("chat  ·  Ready")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_chips_follow_the_theme(qtbot: QtBot, theme: str) -> None:
    apply_theme(theme)
    chips = ModelChips()
    qtbot.addWidget(chips)
    chips.set_models([loaded("chat", GIB)], "chat", NOW)
    t = tokens_for(qtbot_palette())
    assert t.name == theme
    assert f"border-color: {t.accent}" in chips.styleSheet()
    assert f"background: {t.surface}" in chips.styleSheet()


def test_the_load_dialog_line_counts_the_loaded_models() -> None:
    limits = ResidencyLimits(max_models=2, memory_budget_bytes=4 * GIB)
    one = [loaded("chat", GIB)]
    fits = beside_words(GIB, one, limits)
    assert fits.startswith("Loaded now: chat (1.0 GiB): 1.0 GiB of the 4.0 GiB budget.")
    assert fits.endswith("it fits, with 2.0 GiB of the budget left.")
    over = beside_words(7 * GIB // 2, one, limits)
    assert "it needs 512.0 MiB more than the budget leaves" in over
    assert "eject one first, or choose Replace" in over  # the user's own model stays
    by_request = beside_words(7 * GIB // 2, [loaded("chat", GIB, pinned=False)], limits)
    assert "models loaded by requests are unloaded first" in by_request
    full = beside_words(GIB // 2, [*one, loaded("coder", GIB)], limits)
    assert "2 of 2 models are loaded" in full
    assert "eject one first" in full
    assert "larger than the whole budget" in beside_words(5 * GIB, one, limits)


def test_the_chat_keeps_its_loaded_model_and_moves_when_it_is_ejected(qtbot: QtBot) -> None:
    model = ChatModel(Supervisor())
    changes: list[object] = []
    model.local_changed.connect(changes.append)
    model.set_loaded(["chat", "coder"])
    assert model.model_id == "coder"  # no choice yet: the most recently used
    model.use_local("chat")
    assert model.model_id == "chat" and changes == ["coder", "chat"]
    model.set_loaded(["coder"])  # "chat" ejected: the other one
    assert model.model_id == "coder" and changes == ["coder", "chat", "coder"]
    model.set_loaded(["coder", "chat"])  # loaded again: the chat's own choice again
    assert model.model_id == "chat"


def qtbot_palette():
    from PySide6.QtGui import QGuiApplication

    return QGuiApplication.palette()
