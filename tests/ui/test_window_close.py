"""Closing the main window stops the MCP servers that Settings → Tools' Test started:
a real stdio server (the SDK's toy server) that runs, and one that never answers and
ignores SIGTERM, still starting. After the window's ``closed``, neither process is
left (observed with psutil, never after a sleep)."""

from __future__ import annotations

import json
import sys

import pytest

from hearth.config.paths import default_paths
from hearth.ui.pages.settings.tools_box import ToolsBox
from hearth.ui.shell.main_window import MainWindow
from mcp_testing import TOY, process_gone, server_processes

pytestmark = pytest.mark.ui

STUBBORN_MARK = "hearth-close-test-stubborn"
STUBBORN = (  # not an MCP server: it never answers, and SIGTERM does not end it
    f"import signal, time  # {STUBBORN_MARK}\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "time.sleep(120)\n"
)
SERVERS = {
    "toy": {"command": sys.executable, "args": [TOY]},
    "stubborn": {"command": sys.executable, "args": ["-c", STUBBORN]},
}


async def _tools_box(arun, window: MainWindow) -> ToolsBox:
    """Settings shown and its Tools box read, as a user opening the page."""
    window.show()
    window.show_page("Settings")
    box = window.extras.settings_page.tools_box
    await arun.wait_until(box.isVisible, 10, "Settings → Tools shown")
    await box.refresh()
    return box


def test_closing_the_window_stops_the_servers_a_test_started(arun, offline_window: MainWindow):
    default_paths().config_dir.joinpath("mcp.json").write_text(
        json.dumps({"mcpServers": SERVERS}), encoding="utf-8"
    )
    window = offline_window

    async def scenario() -> None:
        box = await _tools_box(arun, window)
        assert sorted(box.table.names) == sorted(SERVERS)
        box.select("toy")
        testing = box.test_selected()
        assert testing is not None
        await testing
        assert box.message.text().startswith("'toy' runs"), box.message.text()
        (toy,) = server_processes(TOY)
        box.select("stubborn")
        stuck = box.test_selected()
        assert stuck is not None
        await arun.wait_until(lambda: server_processes(STUBBORN_MARK), 30, "the stubborn process")
        (stubborn,) = server_processes(STUBBORN_MARK)
        assert not stuck.done() and box.running
        assert window.supervisor.process is None and not window.chat.tools.running

        closed: list[bool] = []
        window.closed.connect(lambda: closed.append(True))
        assert not window.close()  # refused at first: the servers stop, then it closes
        await arun.wait_until(lambda: closed, 30, "the window to close")
        # Awaited by the close, unless it gave up after MCP_STOP_S on a slow machine.
        ended = lambda: process_gone(toy) and process_gone(stubborn)  # noqa: E731
        await arun.wait_until(ended, 30, "both processes to end")
        assert not box.running
        await stuck  # its Test ends, saying so
        assert "stopped" in box.message.text(), box.message.text()

    arun(scenario())


def test_a_window_with_no_tested_server_closes_at_once(arun, offline_window: MainWindow):
    """Nothing started: the close is not deferred (``closed`` comes within close())."""
    window = offline_window

    async def scenario() -> None:
        box = await _tools_box(arun, window)
        assert not box.running
        closed: list[bool] = []
        window.closed.connect(lambda: closed.append(True))
        assert window.close()
        assert closed == [True]

    arun(scenario())

