"""The Welcome window: a GPU that this llama.cpp build can't use is said, with the fix.

The dialog gets the machine and the backend as the probes would report them (a GPU
is not something a test machine can be made to have): a CUDA GPU with a CPU-only
build shows the notice with the rebuild command; a GPU build, a machine without a
GPU, or a broken library (its own message) show none. The rows are the best fit of
each category of the one picks table (``hub.picks``) for the machine as the build sees
it, and their fit chips are coloured by what the build can do.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDialogButtonBox, QLabel, QPushButton, QWidget
from pytestqt.qtbot import QtBot

from hearth.core.units import GIB
from hearth.hardware.fit import FitVerdict
from hearth.hardware.offload_notice import offload_notice
from hearth.hardware.probe import GpuInfo, SystemMemory
from hearth.hub.picks import (
    COMFORTABLE_TOK_S,
    default_picks,
    fits_with_room,
    judge,
    pick_speed,
)
from hearth.ui.machine_speed import MachineSpeed
from hearth.ui.style.theme import apply_theme
from hearth.ui.welcome.first_run import WELCOME_TITLE, FirstRunDialog
from hearth.ui.welcome.llama_backend import BackendInfo
from hearth.ui.widgets.fit_chip import ChipLevel

pytestmark = pytest.mark.ui

DOCS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"

GPU = GpuInfo("NVIDIA GeForce RTX 4070", 12 * GIB, 11 * GIB, "cuda")
WITH_GPU = SystemMemory(32 * GIB, 24 * GIB, 8, 16, (GPU,))
NO_GPU = SystemMemory(32 * GIB, 24 * GIB, 8, 16)
CPU_BUILD = BackendInfo("CPU", False, "CPU : AVX2 = 1")
CUDA_BUILD = BackendInfo("CUDA", True, "CUDA : ARCHS = 890")
BROKEN = BackendInfo("unavailable", False, "libllama.so: cannot open", "libllama.so: cannot open")


def _welcome(
    qtbot: QtBot,
    arun,
    system: SystemMemory,
    backend: BackendInfo,
    speed: MachineSpeed | None = None,
) -> FirstRunDialog:
    dialog = FirstRunDialog(system=system, backend=backend, speed=speed)
    qtbot.addWidget(dialog)
    dialog.show()
    arun(dialog.probe_task, timeout=10)
    return dialog


def _level(dialog: FirstRunDialog, row: int) -> ChipLevel:
    chip = dialog.chip(row)
    assert chip is not None
    return chip.level


def test_gpu_with_a_cpu_only_build_says_how_to_rebuild(qtbot: QtBot, arun, tmp_path: Path) -> None:
    dialog = _welcome(qtbot, arun, WITH_GPU, CPU_BUILD)
    assert dialog.offload_label.isVisible()
    text = dialog.offload_label.text()
    assert text == offload_notice(WITH_GPU, False)  # the one wording, not a copy
    assert "RTX 4070" in text and "CPU-only" in text
    assert "HEARTH_BACKEND=cuda bash scripts/bootstrap" in text
    assert "llama.cpp: CPU only" in dialog.hardware.texts()
    assert "GPU: NVIDIA GeForce RTX 4070, 12.0 GiB" in dialog.hardware.texts()
    # The build can't offload, so nothing is judged to fit on the GPU; fitting in RAM
    # beside an unused GPU is amber, not green.
    verdicts = [fit.verdict for fit in dialog.fits]
    assert FitVerdict.FULL_GPU not in verdicts and FitVerdict.PARTIAL_GPU not in verdicts
    levels = {fit.verdict: _level(dialog, row) for row, fit in enumerate(dialog.fits)}
    assert levels.get(FitVerdict.CPU_ONLY) is ChipLevel.WARN
    assert levels.get(FitVerdict.WONT_FIT, ChipLevel.BAD) is ChipLevel.BAD
    for theme in ("light", "dark"):  # for the docs: the notice as a user sees it
        apply_theme(theme)
        arun(asyncio.sleep(0.05))  # palette events
        shot = tmp_path / f"welcome-gpu-notice-{theme}.png"
        assert dialog.grab().save(str(shot))
        if os.environ.get("HEARTH_SAVE_DOCS_SCREENSHOT"):  # tests never write the repo
            shutil.copyfile(shot, DOCS / shot.name)
    assert dialog.copy_command_button.isVisible()  # the command, one click away
    dialog.copy_command_button.click()
    assert QGuiApplication.clipboard().text() == "HEARTH_BACKEND=cuda bash scripts/bootstrap"
    QGuiApplication.clipboard().clear()


@pytest.mark.parametrize(
    ("system", "backend"),
    [(WITH_GPU, CUDA_BUILD), (NO_GPU, CPU_BUILD), (WITH_GPU, BROKEN)],
    ids=["gpu-build", "no-gpu", "broken-library"],
)
def test_no_notice_when_there_is_nothing_to_fix(
    qtbot: QtBot, arun, system: SystemMemory, backend: BackendInfo
) -> None:
    dialog = _welcome(qtbot, arun, system, backend)
    assert not dialog.offload_label.isVisible() and not dialog.copy_command_button.isVisible()
    assert dialog.offload_label.text() == ""
    said = {CUDA_BUILD: "CUDA (GPU offload)", CPU_BUILD: "CPU only", BROKEN: "not working"}
    assert f"llama.cpp: {said[backend]}" in dialog.hardware.texts()
    levels = [_level(dialog, row) for row in range(len(dialog.cards))]
    assert ChipLevel.UNKNOWN not in levels  # every row judged
    verdicts = [fit.verdict for fit in dialog.fits]
    if backend is CUDA_BUILD:  # every category has a pick for 11 GiB of VRAM
        assert verdicts == [FitVerdict.FULL_GPU] * len(verdicts)
        assert levels == [ChipLevel.GOOD] * len(levels)
    if system is NO_GPU:
        assert verdicts == [FitVerdict.CPU_ONLY] * len(verdicts)
        assert levels == [ChipLevel.GOOD] * len(levels)


def test_rows_are_the_best_fit_of_each_category(qtbot: QtBot, arun) -> None:
    """One row per category of the picks table, in its order: on a 12 GB GPU the
    largest pick of each that fits in VRAM with room (no model of a category is
    hidden for being too big: its smallest shows with a red chip)."""
    picks = default_picks()
    dialog = _welcome(qtbot, arun, WITH_GPU, CUDA_BUILD)
    assert [m.category for m in dialog.models] == list(picks.categories)
    assert [card.title.text() for card in dialog.cards] == [m.name for m in dialog.models]
    kinds = [card.kicker.text() for card in dialog.cards]
    assert kinds == [kind.upper() for kind in picks.categories.values()]
    assert all(b.isEnabled() for b in dialog.download_buttons)  # each fits: each downloads
    for model, fit in zip(dialog.models, dialog.fits, strict=True):
        same_kind = [p for p in picks.picks if p.category == model.category]
        bigger = [p for p in same_kind if p.size_bytes > model.size_bytes]
        assert not [p for p in bigger if fits_with_room(judge(p, WITH_GPU), WITH_GPU)]
        assert fit.verdict is FitVerdict.FULL_GPU
    # A machine too small for anything: each category shows its smallest, in red.
    tiny = SystemMemory(GIB, GIB // 2, 2, 2)
    small = _welcome(qtbot, arun, tiny, CPU_BUILD)
    assert [f.verdict for f in small.fits] == [FitVerdict.WONT_FIT] * len(picks.categories)
    assert {_level(small, row) for row in range(len(small.cards))} == {ChipLevel.BAD}
    assert not any(b.isEnabled() for b in small.download_buttons)  # nothing to download
    for model in small.models:
        assert model.size_bytes == min(
            p.size_bytes for p in picks.picks if p.category == model.category
        )


def test_with_the_measured_bandwidth_rows_are_quick_enough_and_say_how_fast(
    qtbot: QtBot, arun
) -> None:
    """A CPU machine whose RAM moves 20 GB/s: each row runs at reading speed or is the
    fastest of its category that runs, and its chip gives the estimate."""
    picks = default_picks()
    dialog = _welcome(qtbot, arun, NO_GPU, CPU_BUILD, MachineSpeed(ram_bps=20e9))
    assert dialog.bandwidth is not None and dialog.bandwidth.ram_bps == 20e9
    by_size = _welcome(qtbot, arun, NO_GPU, CPU_BUILD)  # no measurement: size alone
    assert dialog.models != by_size.models  # 20 GB/s rules some big ones out
    for row, (model, fit) in enumerate(zip(dialog.models, dialog.fits, strict=True)):
        speed = pick_speed(model, fit, dialog.bandwidth)
        assert speed is not None
        others = [p for p in picks.picks if p.category == model.category]
        fastest = max(pick_speed(p, judge(p, NO_GPU), dialog.bandwidth) or 0 for p in others)
        assert speed >= COMFORTABLE_TOK_S or speed == fastest, model.name
        chip = dialog.chip(row)
        assert chip is not None and "tok/s" in chip.text()


def test_quick_start_says_a_gpu_goes_unused(
    qtbot: QtBot, arun, qloop: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The empty Chat page's "Get a recommended model" says so too: its messages stay
    on screen while the model downloads, when the Welcome window may be long closed."""
    from hearth.ui.shell.main_window import MainWindow
    from hearth.ui.welcome import quick_start

    machines = iter([WITH_GPU, NO_GPU])
    monkeypatch.setattr(quick_start, "probe_system", lambda: next(machines))
    window = MainWindow(log_dir=tmp_path / "logs", chats_db=tmp_path / "chats.db")
    qtbot.addWidget(window)
    start = window.quick_start
    assert arun(start.cpu_note(CPU_BUILD)) == quick_start.CPU_NOTE  # GPU, CPU-only build
    assert arun(start.cpu_note(CPU_BUILD)) == ""  # no GPU: nothing to fix
    assert arun(start.cpu_note(CUDA_BUILD)) == ""  # the build offloads (not even probed)
    assert arun(start.cpu_note(BROKEN)) == ""  # a broken library has its own message
    # The note names the Help menu's entry as the menu shows it.
    assert f"Help > {WELCOME_TITLE}" in quick_start.CPU_NOTE
    assert window.extras.welcome_action.text().replace("&", "") == WELCOME_TITLE


def _cut(widget: QWidget) -> bool:
    """True when ``widget`` (a label or button) shows less than its whole text: a
    wrapped label too short for its lines, or a one-line one narrower than its text."""
    if isinstance(widget, QLabel) and widget.wordWrap():
        return widget.heightForWidth(widget.width()) > widget.height()
    return widget.sizeHint().width() > widget.width()


def _box(part: QWidget, dialog: QWidget) -> QRect:
    return QRect(part.mapTo(dialog, QPoint(0, 0)), part.size())


def _check_whole(dialog: FirstRunDialog, label: str) -> None:
    """The header and footer inside the window, the cards inside their area (all of
    them in view unless it scrolls, and never cut sideways), and no text cut."""
    box = dialog.findChild(QDialogButtonBox)
    assert box is not None
    frame, scroll = dialog.rect(), dialog.cards_scroll
    header: list[QWidget] = [*dialog.hardware.chips, dialog.offload_label]
    for part in [*header, dialog.browse_button, box, scroll]:
        if part.isVisible():
            assert frame.contains(_box(part, dialog)), (label, part.accessibleName(), frame)
    view = QRect(scroll.viewport().mapTo(dialog, QPoint(0, 0)), scroll.viewport().size())
    content = scroll.widget()
    assert content is not None and content.width() <= scroll.viewport().width(), label
    assert content.height() >= scroll.content_height(content.width()), label  # all reachable
    for card in dialog.cards:
        inside = _box(card, content).translated(content.mapTo(dialog, QPoint(0, 0)))
        assert inside.left() >= view.left() and inside.right() <= view.right(), label
        if not scroll.needs_scrolling():  # every card in view
            assert view.contains(inside), (label, card.accessibleName(), inside, view)
    texts = dialog.findChildren(QLabel) + dialog.findChildren(QPushButton)
    cut = [w.text() for w in texts if w.isVisible() and _cut(w)]
    assert not cut, (label, cut)


@pytest.mark.parametrize("machine", ["no-gpu", "gpu-notice", "too-small"])
def test_lays_out_whole_at_its_size_and_on_a_small_screen(
    qtbot: QtBot, arun, tmp_path: Path, machine: str
) -> None:
    """At the size it opens with, and on a 900x650 screen (its room limited to that
    screen's, less a frame), in both themes: every card and the footer are inside the
    window, no text is cut, and there is no empty area under the cards."""
    system, backend = {
        "no-gpu": (NO_GPU, CPU_BUILD),
        "gpu-notice": (WITH_GPU, CPU_BUILD),
        "too-small": (SystemMemory(GIB, GIB // 2, 2, 2), CPU_BUILD),  # red chips
    }[machine]
    dialog = _welcome(qtbot, arun, system, backend, MachineSpeed(ram_bps=20e9))
    close = dialog.findChild(QDialogButtonBox)
    assert close is not None
    for label, size in (("default", None), ("900x650", (900, 650))):
        if size is not None:  # tests/ui/test_screenshots.py's _fit_dialog, on that screen
            dialog.setMaximumSize(size[0] - 40, size[1] - 40)
            hint = dialog.sizeHint().expandedTo(dialog.minimumSize())
            natural = dialog.size().expandedTo(hint)
            dialog.resize(min(natural.width(), size[0] - 40), min(natural.height(), size[1] - 40))
        for theme in ("light", "dark"):
            apply_theme(theme)
            arun(asyncio.sleep(0.05))  # palette events, the layout settles
            assert dialog.grab().save(str(tmp_path / f"welcome-{machine}-{label}-{theme}.png"))
            _check_whole(dialog, label)
            if not dialog.cards_scroll.needs_scrolling():
                last = max(c.mapTo(dialog, QPoint(0, c.height())).y() for c in dialog.cards)
                footer = close.mapTo(dialog, QPoint(0, 0)).y()
                assert footer - last < 80, (label, footer - last)  # no empty area between
            if size is not None:
                assert dialog.height() <= size[1] - 40  # it still fits that screen


def test_fits_an_800x600_screen_with_the_notice(qtbot: QtBot, arun, tmp_path: Path) -> None:
    """On an 800x600 screen (800x560 left under a title bar) the notice and all the
    cards need more height than there is: the window stays within it, the cards scroll
    (to the last one), and the title, the notice and the footer's buttons stay in view."""
    dialog = FirstRunDialog(system=WITH_GPU, backend=CPU_BUILD, speed=MachineSpeed(ram_bps=20e9))
    qtbot.addWidget(dialog)
    dialog.setMaximumSize(800, 560)  # the room on that screen: what room() gives
    assert dialog.room().width() <= 800 and dialog.room().height() <= 560
    dialog.show()
    arun(dialog.probe_task, timeout=10)
    assert dialog.offload_label.isVisible() and len(dialog.cards) == len(dialog.picks.categories)
    for theme in ("light", "dark"):
        apply_theme(theme)
        arun(asyncio.sleep(0.05))
        assert dialog.grab().save(str(tmp_path / f"welcome-800x600-{theme}.png"))
        assert dialog.width() <= 800 and dialog.height() <= 560
        box = dialog.findChild(QDialogButtonBox)
        assert box is not None
        close = box.button(QDialogButtonBox.StandardButton.Close)
        frame = dialog.rect()
        for part in (dialog.browse_button, close, dialog.offload_label, dialog.hardware):
            assert part.isVisible() and frame.contains(_box(part, dialog)), part
        title = dialog.findChild(QLabel)
        assert title is not None and frame.contains(_box(title, dialog))
        _check_whole(dialog, theme)
        scroll = dialog.cards_scroll
        assert scroll.needs_scrolling()  # the cards scroll, nothing else does
        bar = scroll.verticalScrollBar()
        assert bar.isVisible() and bar.maximum() > 0
        bar.setValue(bar.maximum())  # the last card can be brought into view
        arun(asyncio.sleep(0.01))
        last = dialog.cards[-1]
        view = QRect(scroll.viewport().mapTo(dialog, QPoint(0, 0)), scroll.viewport().size())
        assert view.contains(_box(last, dialog)), (_box(last, dialog), view)
        bar.setValue(0)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_opens_at_its_size_rather_than_jumping_when_the_cards_come(
    qtbot: QtBot, arun, theme: str
) -> None:
    """Until the probes answer, "Checking…" cards hold the cards' area: the window
    opens about as tall as it ends (a line of a description at most), not header-high."""
    apply_theme(theme)
    arun(asyncio.sleep(0.05))
    dialog = FirstRunDialog(system=NO_GPU, backend=CPU_BUILD)
    qtbot.addWidget(dialog)
    dialog.show()
    opened = dialog.size()
    held = len(dialog.placeholders)
    assert held == len(dialog.picks.categories) and not dialog.cards
    assert all(card.chip.level is ChipLevel.UNKNOWN for card in dialog.placeholders)
    arun(dialog.probe_task, timeout=10)
    arun(asyncio.sleep(0.05))
    assert not dialog.placeholders and len(dialog.cards) == held
    assert dialog.width() == opened.width()
    assert abs(dialog.height() - opened.height()) <= 40, (opened, dialog.size())


def test_each_card_downloads_or_opens_its_model_in_one_click(qtbot: QtBot, arun) -> None:
    """ "Download" asks for that pick and closes the window; a click elsewhere on the
    card opens it in Discover; "Browse all models" opens Discover's picks."""
    dialog = _welcome(qtbot, arun, NO_GPU, CPU_BUILD)
    wanted: list[object] = []
    chosen: list[tuple[str, str]] = []
    browsed: list[bool] = []
    dialog.download_requested.connect(wanted.append)
    dialog.model_chosen.connect(lambda repo, file: chosen.append((repo, file)))
    dialog.browse_requested.connect(lambda: browsed.append(True))
    card = dialog.cards[1]
    qtbot.mouseClick(card, Qt.MouseButton.LeftButton)  # the card: its page in Discover
    assert chosen == [(card.pick.repo, card.pick.file)] and dialog.isVisible()
    qtbot.mouseClick(dialog.download_buttons[1], Qt.MouseButton.LeftButton)
    assert wanted == [dialog.models[1]] and not dialog.isVisible()
    assert len(chosen) == 1  # the button's click is not the card's
    again = _welcome(qtbot, arun, NO_GPU, CPU_BUILD)
    box = again.findChild(QDialogButtonBox)
    assert box is not None  # Enter closes (Close is the default), never downloads
    assert box.button(QDialogButtonBox.StandardButton.Close).isDefault()
    assert not any(b.isDefault() for b in again.download_buttons)
    again.browse_requested.connect(lambda: browsed.append(True))
    qtbot.mouseClick(again.browse_button, Qt.MouseButton.LeftButton)
    assert browsed == [True] and not again.isVisible()
