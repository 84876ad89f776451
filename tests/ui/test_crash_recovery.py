"""CrashRecovery on its own: restarts after the delay, stops after a crash loop, and
stands down when the user acts. (The end-to-end crash test is in test_chat.py.)"""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from hearth.supervisor import WorkerState
from hearth.ui.shell.crash_recovery import GAVE_UP, RESTARTING, CrashRecovery

pytestmark = pytest.mark.ui


def test_restart_then_give_up_on_a_crash_loop(qtbot: QtBot, qapp: QApplication) -> None:
    restarts: list[int] = []
    recovery = CrashRecovery(lambda: restarts.append(1), delay_ms=10, max_restarts=2)
    for n in (1, 2):
        assert recovery.on_status(WorkerState.CRASHED) == RESTARTING
        assert recovery.on_status(WorkerState.STOPPED) == RESTARTING  # the dead one cleared
        qtbot.waitUntil(lambda n=n: len(restarts) == n, timeout=2000)
        assert recovery.on_status(WorkerState.STARTING) == RESTARTING
        assert recovery.on_status(WorkerState.LOADING) == RESTARTING
        assert recovery.on_status(WorkerState.READY) is None
        assert recovery.on_status(WorkerState.LOADING) is None  # a normal load later
    assert recovery.on_status(WorkerState.CRASHED) == GAVE_UP  # third crash in 2 min
    qtbot.wait(50)
    assert len(restarts) == 2 and not recovery.timer.isActive()


def test_the_user_acting_cancels_the_pending_restart(qtbot: QtBot, qapp: QApplication) -> None:
    restarts: list[int] = []
    recovery = CrashRecovery(lambda: restarts.append(1), delay_ms=30)
    assert recovery.on_status(WorkerState.CRASHED) == RESTARTING
    recovery.cancel()  # Restart clicked, another model opened, or the window closing
    qtbot.wait(80)
    assert restarts == [] and recovery.on_status(WorkerState.STOPPED) is None  # e.g. eject
    assert recovery.on_status(WorkerState.STARTING) is None
    # a load error is not retried in a loop
    assert recovery.on_status(WorkerState.ERROR) is None and not recovery.timer.isActive()
