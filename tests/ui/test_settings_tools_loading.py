"""Settings → Tools never reads mcp.json, the secret store or the permissions file on
the Qt thread: with a keyring that holds every read until the test lets it go, the box
shows that it is reading (no list, no edits) while the read waits, and the list once it
is done. Hidden while a read waits (another page, the window closing), the box cancels
it rather than leave it pending, and reads again when it is shown."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import keyring
import pytest
from pytestqt.qtbot import QtBot

from hearth.config.paths import AppPaths
from hearth.config.secret_stores import KeyringStore
from hearth.library import Library
from hearth.tools.mcp_file import McpFile
from hearth.tools.permissions import ToolPermissions
from hearth.ui.app_settings import SettingsStore
from hearth.ui.pages.settings.page import SettingsPage
from hearth.ui.pages.settings.tools_box import READING, ToolsBox
from hearth.ui.pages.settings.tools_permissions import READING as READING_PERMISSIONS
from keyring_backends.gated_keyring import GatedKeyring

pytestmark = pytest.mark.ui

MCP = "mcp/"  # the names of MCP secrets in the store


@pytest.fixture
def ring() -> Iterator[GatedKeyring]:
    previous = keyring.get_keyring()
    gated = GatedKeyring()
    keyring.set_keyring(gated)
    try:
        yield gated
    finally:
        gated.gate.set()  # a read still held lets go
        keyring.set_keyring(previous)


@pytest.fixture
def page(qtbot: QtBot, tmp_path: Path, ring: GatedKeyring) -> SettingsPage:
    """A page over a file with one server whose token is in the (gated) keyring, and
    one standing permission; the gate is closed once they are written."""
    config = tmp_path / "config"
    mcp_file = McpFile(config / "mcp.json", lambda: KeyringStore("(test)"))
    mcp_file.save({"mcpServers": {"svc": {"command": sys.executable, "args": ["-V"],
                                          "env": {"SVC_TOKEN": "t-123"}}}})  # fmt: skip
    permissions = ToolPermissions(config / "tool-permissions.json")
    permissions.allow("svc", "lookup")
    ring.gate.clear()
    ring.calls.clear()
    page = SettingsPage(
        SettingsStore(config / "settings.json"), Library(AppPaths(tmp_path / "data", config)),
        log_dir=tmp_path / "logs", mcp_file=mcp_file, tool_permissions=permissions,
        import_sources=lambda: [],
    )  # fmt: skip
    qtbot.addWidget(page)
    page.resize(1100, 900)
    return page


def _reading(box: ToolsBox) -> bool:
    return (
        box.empty_label.isVisibleTo(box) and box.empty_label.text() == READING
        and not box.table.isVisibleTo(box)
        and not box.add_button.isEnabled() and not box.json_button.isEnabled()
        and box.permissions.empty_label.text() == READING_PERMISSIONS
    )  # fmt: skip


async def refresh_held(arun: Any, box: ToolsBox, ring: GatedKeyring) -> asyncio.Future[None]:
    """Start the box's read, and return it once its MCP secret read waits at the keyring."""
    task = box.refresh()
    await arun.wait_until(lambda: ring.holds(MCP), 30, "an MCP secret read held")
    return task


def test_the_box_says_it_is_reading_while_the_keyring_waits(
    arun, page: SettingsPage, ring: GatedKeyring
):
    box = page.tools_box
    page.show()

    async def scenario() -> None:
        task = await refresh_held(arun, box, ring)
        # The Qt thread runs this while the read waits: the read is on another thread.
        assert _reading(box) and not box.loaded
        ring.gate.set()
        await task
        await arun.wait_until(lambda: box.permissions.loaded, 30, "the permissions")

    arun(scenario())
    assert box.loaded and box.table.isVisibleTo(box) and box.table.rowCount() == 1
    assert box.table.item(0, 0).text() == "svc"
    assert box.table.item(0, 4).text() == "not started"  # its token is in the keyring
    assert box.add_button.isEnabled() and box.json_button.isEnabled()
    assert box.edit_button.isEnabled()  # the first row is selected
    assert [(p.server, p.tool) for p in box.permissions.entries] == [("svc", "lookup")]
    mcp_reads = ring.threads(MCP)  # (the account box reads the HF token too)
    assert mcp_reads and threading.main_thread() not in mcp_reads


def test_a_read_in_flight_is_cancelled_when_the_box_is_hidden(
    arun, page: SettingsPage, ring: GatedKeyring
):
    box = page.tools_box
    page.show()

    async def scenario() -> None:
        task = await refresh_held(arun, box, ring)
        page.hide()  # what switching pages or closing the window does to it
        await arun.wait_until(task.done, 30, "the read to end")
        assert task.cancelled() and _reading(box)
        ring.gate.set()
        page.show()  # shown again: it reads again
        await arun.wait_until(lambda: box.loaded and box.permissions.loaded, 30, "the list")

    arun(scenario())
    assert box.table.rowCount() == 1 and box.permissions.entries


def test_a_hidden_box_does_not_read_until_it_is_shown(arun, page: SettingsPage, ring: GatedKeyring):
    box = page.tools_box
    ring.gate.set()
    arun(box.refresh())  # hidden: nothing is read (no keyring at the app's start)
    assert not box.loaded and ring.threads(MCP) == []
    page.show()
    arun(arun.wait_until(lambda: box.loaded and box.permissions.loaded, 30, "the list"))
    assert box.table.rowCount() == 1 and ring.threads(MCP)


def test_a_read_that_fails_is_said_and_the_box_stays_usable(qtbot: QtBot, arun, tmp_path: Path):
    def no_sources() -> list:  # type: ignore[type-arg]
        raise RuntimeError("the other apps' folders can't be listed")

    config = tmp_path / "config"
    page = SettingsPage(
        SettingsStore(config / "settings.json"), Library(AppPaths(tmp_path / "data", config)),
        log_dir=tmp_path / "logs", tool_permissions=ToolPermissions(config / "p.json"),
        mcp_file=McpFile(config / "mcp.json", lambda: KeyringStore("(test)")),
        import_sources=no_sources,
    )  # fmt: skip
    qtbot.addWidget(page)
    page.show()
    box = page.tools_box
    arun(box.refresh())
    assert box.loaded and "can't be listed" in box.message.text()
    assert box.add_button.isEnabled() and box.json_button.isEnabled()
