"""GUI entry point: QApplication + qasync loop + main window."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from hearth.config.folders import log_dir
from hearth.ui.event_loop import create_event_loop
from hearth.ui.gc_guard import GcOnGuiThread
from hearth.ui.shell.main_window import MainWindow
from hearth.ui.style.theme import SystemThemeFollower, apply_theme

log = logging.getLogger(__name__)

RESOURCES = Path(__file__).resolve().parent / "resources"


def default_log_dir() -> Path:
    """Where the worker's stderr goes (under HEARTH_DATA_DIR when that is set)."""
    return log_dir()


def run_gui(argv: Sequence[str]) -> int:
    """Run the desktop app until its window closes; the worker is stopped on the way out.

    ``argv[1]``, when it names a ``.gguf`` file, is opened at start.
    """
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(list(argv))
    app.setApplicationName("Hearth")
    app.setDesktopFileName("org.hearth.hearth")  # Briefcase: bundle + app name
    app.setWindowIcon(QIcon(str(RESOURCES / "icon.png")))
    app.setQuitOnLastWindowClosed(False)  # the loop ends when the window says it closed
    app.setStyle("Fusion")  # the same look on every desktop; it follows our palette
    SystemThemeFollower(app)  # "system" keeps following the desktop's light/dark
    gc_guard = GcOnGuiThread(app)
    loop = create_event_loop(app)
    asyncio.set_event_loop(loop)

    window = MainWindow(log_dir=default_log_dir())
    done: asyncio.Future[int] = loop.create_future()

    def finish() -> None:
        if not done.done():
            done.set_result(0)

    window.closed.connect(finish)
    app.aboutToQuit.connect(finish)
    # Ctrl+C in a terminal closes the window cleanly; the timer lets Python see signals.
    signal.signal(signal.SIGINT, lambda *_: window.close())
    wake = QTimer()
    wake.start(250)
    wake.timeout.connect(lambda: None)

    apply_theme(window.extras.store.settings.theme)  # icons follow (on PaletteChange)
    window.show()
    window.extras.maybe_show_first_run()
    args = list(argv[1:])
    if args and args[0].lower().endswith(".gguf"):
        window.open_model(args[0])
    try:
        with loop:
            code = int(loop.run_until_complete(done))
            loop.run_until_complete(loop.shutdown_asyncgens())
            return code
    finally:
        wake.stop()
        window.supervisor.stop_sync()
        gc_guard.stop()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
