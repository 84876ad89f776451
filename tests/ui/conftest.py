"""UI test fixtures: a qasync event loop on pytest-qt's QApplication."""

from __future__ import annotations

import asyncio
import gc
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtWidgets import QApplication

from click_counter import ClickCounter
from hearth.supervisor import LoadOptions
from hearth.ui.chat.turns import ChatSettings
from hearth.ui.event_loop import HearthEventLoop, create_event_loop
from hearth.ui.shell.main_window import MainWindow
from hearth.ui.style.theme import clear_theme
from hearth.ui.welcome import llama_backend

T = TypeVar("T")


class AsyncRunner:
    """Runs test coroutines on the qasync loop, so Qt events and asyncio both advance."""

    def __init__(self, loop: HearthEventLoop) -> None:
        self.loop = loop

    def __call__(self, coro: Awaitable[T], timeout: float = 180.0) -> T:
        return self.loop.run_until_complete(asyncio.wait_for(coro, timeout))

    @staticmethod
    async def wait_until(
        predicate: Callable[[], Any], timeout: float = 60.0, what: str = "condition"
    ) -> None:
        """Poll ``predicate`` on the running loop (Qt keeps processing events meanwhile)."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
            await asyncio.sleep(0.02)


@pytest.fixture(autouse=True)
def gc_on_gui_thread() -> Iterator[None]:
    """As in the app (ui/gc_guard.py): no collection of Qt objects on other threads."""
    gc.disable()
    try:
        yield
    finally:
        gc.collect()
        gc.enable()


@pytest.fixture(autouse=True)
def default_theme(qapp: QApplication) -> Iterator[None]:
    """Every UI test starts and ends on the default look.

    The app's theme is app-wide on purpose (dialogs, menus and tooltips must follow
    it), so a test that picks dark or light (Settings, or a failure half-way) would
    otherwise leave it for every later test and its screenshots.
    """
    _reset_theme(qapp)
    yield
    _reset_theme(qapp)


def _reset_theme(qapp: QApplication) -> None:
    if qapp.styleSheet() or qapp.palette().resolveMask() != 0:
        clear_theme()  # no palette or stylesheet of ours: Qt's own look
        qapp.processEvents()  # deliver the palette change to live widgets now


@pytest.fixture
def qloop(qapp: QApplication) -> Iterator[HearthEventLoop]:
    # The tests close windows themselves; don't let that quit the application.
    qapp.setQuitOnLastWindowClosed(False)
    loop = create_event_loop(qapp)
    asyncio.set_event_loop(loop)
    yield loop
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()
    asyncio.set_event_loop(None)


@pytest.fixture
def arun(qloop: HearthEventLoop) -> AsyncRunner:
    return AsyncRunner(qloop)


@pytest.fixture
def click_counter(qapp: QApplication) -> Iterator[ClickCounter]:
    """A ``ClickCounter`` installed on the application for the test's duration."""
    counter = ClickCounter()
    qapp.installEventFilter(counter)
    try:
        yield counter
    finally:
        qapp.removeEventFilter(counter)


@pytest.fixture
def offline_window(
    qtbot: Any, qloop: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> MainWindow:
    """A main window with no model, no Hub and a fixed backend answer (the real probe
    runs a child process), its logs and chats in the test's folder; not yet shown."""
    monkeypatch.setattr(
        llama_backend, "probe_backend", lambda _p: llama_backend.BackendInfo("CPU", False, "CPU")
    )
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # no Hub from tests
    win = MainWindow(log_dir=tmp_path / "logs", chats_db=tmp_path / "chats.db")
    qtbot.addWidget(win)
    return win


@pytest.fixture
def library_window(
    qtbot: Any, tmp_path: Path, tiny_model_q8: Path, tiny_model_f16: Path
) -> MainWindow:
    """A shown main window whose library holds both tiny models, by name; loads get one
    small 2-slot context and chats reply greedily, 8 tokens at most."""
    win = MainWindow(
        log_dir=tmp_path / "logs",
        load_options=LoadOptions(n_ctx=1024, n_parallel=2),
        chat_settings=ChatSettings(temperature=0.0, max_tokens=8),
        chats_db=tmp_path / "chats.db",
    )
    qtbot.addWidget(win)
    win.show()
    for model in (tiny_model_q8, tiny_model_f16):
        win.services.library.import_in_place(model)
    return win
