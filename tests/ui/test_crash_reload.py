"""After a worker crash the app brings back every model it held (issue 22): the banner
says it is restarting and how many models it reloads, each chip comes back, and the
chat keeps its model (waiting for it while it comes back). A real worker with two tiny
library models, killed with SIGKILL; the waits are on what the window shows."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

from hearth.supervisor import LoadOptions
from hearth.supervisor.recovery import Recovery
from hearth.ui.shell.crash_recovery import RESTARTING, recovery_text
from hearth.ui.shell.main_window import MainWindow

pytestmark = pytest.mark.ui

OTHER = LoadOptions(n_ctx=512, n_parallel=1)


def model_id(path: Path) -> str:
    return path.name.removesuffix(".gguf")


def test_the_words_for_the_reloads() -> None:
    assert recovery_text(Recovery(pending=("a", "b"))) == f"{RESTARTING} reloading 2 models."
    assert recovery_text(Recovery(pending=("b",), back=("a",))) == (
        f"{RESTARTING} reloading 2 models; back: a."
    )
    assert recovery_text(Recovery(back=("a", "b"))) is None  # all back: nothing to say
    assert recovery_text(Recovery(back=("a",), failed=(("b", "file not found."),))) == (
        "Hearth restarted the model worker after a crash. Could not bring back b: file not found."
    )


def test_a_crash_brings_back_every_chip_and_the_chat_keeps_its_model(
    arun: Any, library_window: MainWindow, tiny_model_q8: Path, tiny_model_f16: Path
) -> None:
    window = library_window
    q8, f16 = model_id(tiny_model_q8), model_id(tiny_model_f16)
    bar, chat = window.model_bar, window.chat
    banners: list[str] = []
    can_send: dict[str, bool] = {}  # the banner's text: whether the chat could send then

    def shown(text: str) -> None:
        banners.append(text)
        can_send[text] = window.chat_view.send_button.isEnabled()

    window.status_view.banner_shown.connect(shown)
    outcomes: list[str] = []
    chat.generation_finished.connect(outcomes.append)

    def chips() -> set[str]:
        return set(bar.chips.chips) if bar.chips.isVisible() else set()

    async def scenario() -> None:
        window.open_model(tiny_model_q8)
        await arun.wait_until(lambda: chips() == {q8}, 120, "the first chip")
        window.loaded_models.load(tiny_model_f16, OTHER, replace=False)
        await arun.wait_until(lambda: chips() == {q8, f16}, 120, "both chips")
        assert chat.model.model_id == f16  # the model just loaded is the chat's
        bar.chips.chips[q8].use_requested.emit(q8)  # the chip's "Chat with this model"
        assert chat.model.model_id == q8  # f16 stays the most recently used one
        shapes = {m.info.id: m.info.n_slots for m in window.loaded_models.residents.models}

        process = window.supervisor.process
        assert process is not None and process.pid is not None
        os.kill(process.pid, signal.SIGKILL)
        await arun.wait_until(lambda: any(RESTARTING in b for b in banners), 15, "the banner")
        await arun.wait_until(
            lambda: (
                window.supervisor.status.recovery is not None
                and window.supervisor.status.recovery.done
            ),
            120,
            "the reloads",
        )
        await arun.wait_until(lambda: chips() == {q8, f16}, 30, "both chips back")
        assert f"{RESTARTING} reloading 2 models." in banners
        reloading = f"{RESTARTING} reloading 2 models; back: {f16}."  # most recent first
        assert reloading in banners
        assert not can_send[reloading]  # the chat waits for its own model
        assert not window.banner.isVisible()  # all back: nothing left to say
        assert window.supervisor.process is not None
        assert window.supervisor.process.pid != process.pid
        got = {m.info.id: m.info.n_slots for m in window.loaded_models.residents.models}
        assert got == shapes  # each with its own settings

        # The chat goes on with its own model, with no load.
        assert chat.model.model_id == q8 and bar.chips.chips[q8].current
        assert window.chat_view.send_button.isEnabled()
        window.chat_view.input.setPlainText("Still there?")
        window.chat_view.send_button.click()
        await arun.wait_until(lambda: outcomes, 60, "the reply")
        assert outcomes == ["done"] and chat.turns[-1].model == q8

    arun(scenario())


def test_what_could_not_come_back_can_be_dismissed(
    arun: Any,
    library_window: MainWindow,
    tmp_path: Path,
    tiny_model_q8: Path,
    tiny_model_f16: Path,
) -> None:
    """The failure stays in the status until the user's next load; the banner's
    Dismiss hides it (a status shown again keeps it hidden), another crash's reloads are
    said again, and the user's load ends it."""
    window = library_window
    doomed = tmp_path / "hearth-tiny-doomed.gguf"
    shutil.copyfile(tiny_model_f16, doomed)
    window.services.library.import_in_place(doomed)
    q8, f16, gone = model_id(tiny_model_q8), model_id(tiny_model_f16), model_id(doomed)
    bar, status_view = window.model_bar, window.status_view
    dismiss = status_view.dismiss_button

    def chips() -> set[str]:
        return set(bar.chips.chips) if bar.chips.isVisible() else set()

    def failure_shown() -> bool:
        return window.banner.isVisible() and f"Could not bring back {gone}" in (
            window.banner_label.text()
        )

    async def crash_and_wait_for_the_failure() -> None:
        process = window.supervisor.process
        assert process is not None and process.pid is not None
        os.kill(process.pid, signal.SIGKILL)
        await arun.wait_until(
            lambda: (
                window.supervisor.process not in (None, process)
                and window.supervisor.status.recovery is not None
                and window.supervisor.status.recovery.done
            ),
            120,
            "the reloads",
        )
        await arun.wait_until(failure_shown, 15, "the failure in the banner")

    async def scenario() -> None:
        assert not dismiss.isVisible()
        window.open_model(tiny_model_q8)
        await arun.wait_until(lambda: chips() == {q8}, 120, "the first chip")
        window.loaded_models.load(doomed, OTHER, replace=False)
        await arun.wait_until(lambda: chips() == {q8, gone}, 120, "both chips")
        doomed.unlink()  # the loaded copy stays mapped; its reload can't find it

        await crash_and_wait_for_the_failure()
        assert dismiss.isVisible() and not status_view.restart_button.isVisible()
        dismiss.click()
        assert not window.banner.isVisible() and not dismiss.isVisible()
        recovery = window.supervisor.status.recovery
        assert recovery is not None and recovery.failed  # still in the status
        status_view.show(window.supervisor.status)  # the same status shown again
        assert not window.banner.isVisible()

        await crash_and_wait_for_the_failure()  # (the broken model isn't tried again,
        assert dismiss.isVisible()  # but the new reloads say what is missing)
        window.loaded_models.load(tiny_model_f16, OTHER, replace=False)  # the user acts
        await arun.wait_until(lambda: chips() == {q8, f16}, 120, "the new chip")
        assert window.supervisor.status.recovery is None
        assert not window.banner.isVisible() and not dismiss.isVisible()

    arun(scenario())
