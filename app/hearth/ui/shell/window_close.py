"""Closing the main window: the model worker, the MCP servers (the chat's, and those
Settings → Tools' Test started) and the downloads stop first, then the window really
closes.

Stopping them takes a while (a worker may take seconds to exit), so the first close
is refused: the window says so, is disabled, and an asyncio task stops each in turn,
then closes it again, this time for real. Without a running loop (a teardown) they are
stopped synchronously instead. Either way the window's state is saved, its remaining
tasks cancelled, the chat store closed and ``on_closed`` called exactly once.
The MCP servers are stopped together and the wait for them is bounded
(``MCP_STOP_S``): the SDK closes a server's stdin, then signals it, then kills it,
and a close must not hang on one that outlives all that.

Kept out of ``main_window.py``, which hands its ``closeEvent`` here: this part owns
the closing's state (the task, whether the close is real, whether it was announced).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QLabel

from hearth.chats import AsyncChatStore
from hearth.supervisor import Supervisor
from hearth.ui.chat.session import ChatController
from hearth.ui.pages.services import AppServices
from hearth.ui.pages.settings.tools_box import ToolsBox
from hearth.ui.shell.crash_recovery import CrashRecovery
from hearth.ui.shell.model_loads import ModelLoads
from hearth.ui.shell.window_extras import WindowExtras
from hearth.ui.tasks import TaskSet

log = logging.getLogger(__name__)

# The SDK's own escalation takes at most ~6 s (2 s after stdin closes, 2 s after
# SIGTERM, 2 s to see the SIGKILL land); past this the window closes regardless.
MCP_STOP_S = 10.0


class ClosingWindow(Protocol):
    """What closing uses of the main window (which is one); naming only these keeps
    this module and the window out of an import circle."""

    @property
    def supervisor(self) -> Supervisor: ...
    @property
    def services(self) -> AppServices: ...
    @property
    def chat(self) -> ChatController: ...
    @property
    def loads(self) -> ModelLoads: ...
    @property
    def recovery(self) -> CrashRecovery: ...
    @property
    def extras(self) -> WindowExtras: ...
    @property
    def chats_db(self) -> AsyncChatStore: ...
    @property
    def status_label(self) -> QLabel: ...
    # Qt's own names, from QWidget
    def setEnabled(self, enabled: bool, /) -> None: ...  # noqa: N802
    def close(self) -> bool: ...


class WindowClose:
    """``close_event`` is the window's ``closeEvent``; ``closing`` once it has begun."""

    def __init__(
        self, window: ClosingWindow, tasks: TaskSet, on_closed: Callable[[], None]
    ) -> None:
        self.window = window
        self.tasks = tasks
        self.on_closed = on_closed
        self._task: asyncio.Task[None] | None = None
        self._really_close = False
        self._closed_emitted = False

    @property
    def closing(self) -> bool:
        """Whether the stop before closing has begun (no restarts after that)."""
        return self._task is not None

    def close_event(self, event: QCloseEvent) -> None:
        w = self.window
        busy = w.supervisor.process is not None or w.services.has_downloads
        busy = busy or w.chat.tools.running or self._tested.running  # MCP servers
        if self._really_close or not busy:
            self._finish_close()
            event.accept()
            return
        event.ignore()
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            # No loop to run on (e.g. teardown): stop synchronously and close now.
            self.tasks.cancel_all()
            w.services.close_sync()
            w.supervisor.stop_sync()
            self._finish_close()
            event.accept()
            return
        if self._task is None:
            w.status_label.setText("Stopping the model worker…")
            w.setEnabled(False)
            self._task = self.tasks.spawn(self._close_async(), name="close")

    async def _close_async(self) -> None:
        w = self.window
        w.recovery.cancel()
        w.chat.stop()
        w.loads.cancel()
        await self._stop_mcp_servers()
        try:
            try:
                await w.services.aclose()  # partial downloads stay, to resume later
            except Exception:
                log.exception("could not stop the downloads cleanly")
            await w.supervisor.stop()
        finally:
            self._really_close = True
            w.close()

    @property
    def _tested(self) -> ToolsBox:
        """Settings → Tools, whose Test starts servers of its own."""
        return self.window.extras.settings_page.tools_box

    async def _stop_mcp_servers(self) -> None:
        """The chat's servers and the tested ones, together, waited on for at most
        ``MCP_STOP_S`` (not cancelled past that: the SDK's kill may still be under way)."""
        stops = asyncio.gather(
            self.window.chat.tools.aclose(), self._tested.close_servers(),
            return_exceptions=True,
        )  # fmt: skip
        done, _ = await asyncio.wait({stops}, timeout=MCP_STOP_S)
        if not done:
            log.warning("MCP servers still stopping after %g s; closing anyway", MCP_STOP_S)
            return
        for outcome in stops.result():
            if isinstance(outcome, BaseException):
                log.error("could not stop the MCP servers cleanly", exc_info=outcome)

    def _finish_close(self) -> None:
        w = self.window
        w.extras.save_window_state()
        if not self._really_close:
            self.tasks.cancel_all()
        self._really_close = True
        w.services.close_sync()
        w.chats_db.close()  # waits for queued writes (a few ms at most)
        if not self._closed_emitted:
            self._closed_emitted = True
            self.on_closed()
