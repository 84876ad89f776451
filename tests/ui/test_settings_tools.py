"""Settings → Tools (MCP servers): the list of ``mcp.json``, Add and Edit through the
form (a secret goes to the store, never to the file or back to the form), the JSON view
refusing a mistake, the import offer, a Test that starts the real ``mcp-server-time``
from PyPI, a failing server whose row says why, the on/off switch, Remove, and revoking
a standing permission. Real files, a real file secret store, real servers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from hearth.config.paths import AppPaths
from hearth.config.secret_stores import FileStore
from hearth.library import Library
from hearth.tools.mcp_file import McpFile
from hearth.tools.mcp_import import ImportSource, find_sources
from hearth.tools.permissions import ToolPermissions
from hearth.ui.app_settings import SettingsStore
from hearth.ui.pages.settings.page import SettingsPage
from hearth.ui.pages.settings.tools_box import ToolsBox
from hearth.ui.pages.settings.tools_dialog import STORED
from mcp_testing import TOY

pytestmark = pytest.mark.ui

TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")


class Env:
    def __init__(self, tmp_path: Path) -> None:
        self.home = tmp_path / "home"
        self.store = FileStore(tmp_path / "secrets.json")
        self.mcp_file = McpFile(tmp_path / "config" / "mcp.json", lambda: self.store)
        self.permissions = ToolPermissions(tmp_path / "config" / "tool-permissions.json")
        self.sources: list[ImportSource] = []


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


@pytest.fixture
def box(qtbot: QtBot, arun, env: Env, tmp_path: Path) -> ToolsBox:
    paths = AppPaths(tmp_path / "data", tmp_path / "config")
    page = SettingsPage(
        SettingsStore(tmp_path / "config" / "settings.json"), Library(paths),
        log_dir=tmp_path / "logs", mcp_file=env.mcp_file, tool_permissions=env.permissions,
        import_sources=lambda: find_sources("Linux", env.home),
    )  # fmt: skip
    qtbot.addWidget(page)
    page.resize(1100, 900)
    page.show()
    tools = page.tools_box
    arun(tools.refresh())
    yield tools
    arun(tools.close_servers())


def rows(box: ToolsBox) -> list[list[str]]:
    table = box.table
    return [
        [table.item(r, c).text() for c in (0, 1, 2, 4)] for r in range(table.rowCount())
    ]


def test_empty_then_add_edit_and_test_the_time_server(arun, box: ToolsBox, env: Env):
    assert box.empty_label.isVisibleTo(box) and not box.table.isVisibleTo(box)
    assert box.add_button.property("primary") is True
    assert box.permissions.empty_label.isVisibleTo(box)

    async def scenario() -> None:
        dialog = box.open_add()
        dialog.name_field.setText("time")
        dialog.command_field.setText(TIME_SERVER)
        dialog.args_field.setText("--local-timezone 'Europe/Paris'")
        dialog.add_variable("TZ_API_TOKEN", "tok-123")
        dialog.add_variable("LOG_LEVEL", "info")
        org = dialog.add_variable("ORG", "acme")  # the user marks this one secret
        dialog.vars_table.item(org, 2).setCheckState(Qt.CheckState.Checked)
        typed = dialog.add_variable("", "")
        dialog.vars_table.item(typed, 0).setText("SESSION_TOKEN")  # named after it was added
        dialog.vars_table.item(typed, 1).setText("s-9")
        for row in (0, typed):  # names that say secret: ticked, and can't be unticked
            mark = dialog.vars_table.item(row, 2)
            assert mark.checkState() == Qt.CheckState.Checked
            assert not mark.flags() & Qt.ItemFlag.ItemIsEnabled
        assert dialog.vars_table.item(1, 2).checkState() == Qt.CheckState.Unchecked
        assert await dialog.save_now()
        await arun.wait_until(lambda: box.table.rowCount() == 1, 10, "the row")
        assert rows(box) == [["time", "stdio", f"{TIME_SERVER} --local-timezone Europe/Paris",
                              "not started"]]  # fmt: skip
        saved = json.loads(env.mcp_file.path.read_text())["mcpServers"]["time"]
        assert saved["env"] == {"TZ_API_TOKEN": "hearth-secret:mcp/time/env/TZ_API_TOKEN",
                                "LOG_LEVEL": "info", "ORG": "hearth-secret:mcp/time/env/ORG",
                                "SESSION_TOKEN": "hearth-secret:mcp/time/env/SESSION_TOKEN"}
        assert env.store.get("mcp/time/env/TZ_API_TOKEN") == "tok-123"
        assert env.store.get("mcp/time/env/ORG") == "acme"

        # Edit: the stored secret is never shown back, and is kept unless retyped.
        edit = box.edit_selected()
        assert edit is not None
        values = {edit.vars_table.item(r, 0).text(): edit.vars_table.item(r, 1).text()
                  for r in range(edit.vars_table.rowCount())}  # fmt: skip
        assert values == {"TZ_API_TOKEN": STORED, "LOG_LEVEL": "info", "ORG": STORED,
                          "SESSION_TOKEN": STORED}  # fmt: skip
        edit.args_field.setText("--local-timezone UTC")
        assert await edit.save_now()
        await arun.wait_until(lambda: "UTC" in rows(box)[0][2], 10, "the edited row")
        assert env.store.get("mcp/time/env/TZ_API_TOKEN") == "tok-123"

        # Test: the real server from PyPI starts off the Qt thread and lists its tools.
        await box.test("time")
        assert rows(box)[0][3] == "running · 2 tools"
        assert "get_current_time" in box.message.text()
        assert "convert_time" in box.message.text()

    arun(scenario())


def test_a_failing_server_and_a_missing_secret_say_why_on_their_rows(
    arun, box: ToolsBox, env: Env, tmp_path: Path
):
    quits = "import sys; sys.stderr.write('missing API_TOKEN\\n'); sys.exit(2)"
    env.mcp_file.save({"mcpServers": {
        "quits": {"command": sys.executable, "args": ["-c", quits]},
        "keyed": {"command": sys.executable, "args": [TOY], "env": {"TOY_TOKEN": "t"}},
    }})  # fmt: skip
    env.store.delete("mcp/keyed/env/TOY_TOKEN")

    async def scenario() -> None:
        await box.refresh()
        assert rows(box)[1][3] == (
            "can't start: the secret mcp/keyed/env/TOY_TOKEN is not in the secret store"
        )
        await box.test("quits")
        state = rows(box)[0][3]
        assert state.startswith("failed: ") and "missing API_TOKEN" in state
        await box.test("keyed")
        assert rows(box)[1][3].startswith("failed: ") and "TOY_TOKEN" in rows(box)[1][3]

    arun(scenario())


def test_the_json_view_refuses_a_mistake_and_saves_what_is_right(
    arun, box: ToolsBox, env: Env
):
    async def scenario() -> None:
        dialog = await box.open_json()
        assert dialog is not None
        assert json.loads(dialog.editor.toPlainText()) == {"mcpServers": {}}
        dialog.editor.setPlainText('{"mcpServers": {\n  "a": {"command": "x",}\n}}')
        assert not await dialog.save_now()
        assert "line 2" in dialog.error_label.text() and dialog.error_label.isVisibleTo(dialog)
        assert dialog.editor.textCursor().blockNumber() == 1  # the cursor is at the mistake
        dialog.editor.setPlainText('{"mcpServers": {"a": {"url": "ftp://x"}}}')
        assert not await dialog.save_now()
        assert "http:// or https://" in dialog.error_label.text()
        assert not env.mcp_file.path.exists()
        dialog.editor.setPlainText(json.dumps({"mcpServers": {"docs": {
            "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer s3"}}}}))
        assert await dialog.save_now()
        await arun.wait_until(lambda: box.table.rowCount() == 1, 10, "the row")
        assert rows(box)[0][:3] == ["docs", "http", "http://127.0.0.1:9/mcp"]
        assert "s3" not in env.mcp_file.path.read_text()
        assert env.store.get("mcp/docs/headers/Authorization") == "Bearer s3"

    arun(scenario())


def test_the_import_offer_skips_what_is_here_and_moves_secrets(
    arun, box: ToolsBox, env: Env
):
    claude = env.home / ".config" / "Claude" / "claude_desktop_config.json"
    claude.parent.mkdir(parents=True)
    claude.write_text(json.dumps({"mcpServers": {
        "time": {"command": TIME_SERVER},
        "github": {"command": "npx", "args": ["-y", "server-github"],
                   "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_x"}},
    }}))  # fmt: skip
    env.mcp_file.put("time", {"command": TIME_SERVER})

    async def scenario() -> None:
        await box.refresh()
        (button,) = box.offers.buttons
        assert button.text() == "Import from Claude Desktop"
        assert button.property("primary") is False  # a server is here already
        (label,) = box.offers.labels
        assert "1 to import (github)" in label.text() and "already here: time" in label.text()
        button.click()
        await arun.wait_until(lambda: box.table.rowCount() == 2, 10, "the imported row")
        assert "Imported from Claude Desktop: github; skipped, already here: time" in (
            box.message.text()
        )
        assert box.offers.buttons == []  # nothing left to offer
        assert "ghp_x" not in env.mcp_file.path.read_text()
        assert env.store.get("mcp/github/env/GITHUB_PERSONAL_ACCESS_TOKEN") == "ghp_x"

    arun(scenario())


def test_switch_off_remove_and_revoke(arun, box: ToolsBox, env: Env, qtbot: QtBot):
    env.mcp_file.put("toy", {"command": sys.executable, "args": [TOY]})
    env.mcp_file.put("other", {"command": sys.executable, "args": [TOY]})
    env.permissions.allow("toy", "add")
    env.permissions.allow("other", "nap")
    env.permissions.allow("toy", "env")

    async def scenario() -> None:
        await box.refresh()
        assert box.permissions.list.count() == 3
        assert box.permissions.list.item(0).text().startswith("add of toy (since ")

        switch = box.table.cellWidget(0, 3)
        switch.click()
        await arun.wait_until(lambda: rows(box)[0][3] == "turned off", 10, "turned off")
        assert json.loads(env.mcp_file.path.read_text())["mcpServers"]["toy"]["disabled"]

        box.permissions.list.setCurrentRow(1)
        await box.permissions.revoke_selected()
        assert not env.permissions.allows("other", "nap")
        assert "asks again before nap of other" in box.permissions.message.text()
        assert box.permissions.list.count() == 2

        box.select("toy")
        ask = box.remove_selected()
        assert ask is not None
        ask.button(ask.StandardButton.Yes).click()
        assert box.task is not None
        await box.task
        assert [r[0] for r in rows(box)] == ["other"]
        assert env.permissions.entries() == []  # toy's went with it
        assert box.permissions.empty_label.isVisibleTo(box)

    arun(scenario())


@pytest.mark.parametrize(
    ("broken", "named"),
    [('{"mcpServers": {"a": {"command": 3}}}', 'needs a "command"'),
     ('{"mcpServers": {"a": ', "not valid JSON (line 1")],
)  # fmt: skip
def test_a_broken_file_is_named_and_fixed_in_the_json_view(
    arun, box: ToolsBox, env: Env, broken: str, named: str
):
    env.mcp_file.path.parent.mkdir(parents=True, exist_ok=True)
    env.mcp_file.path.write_text(broken)

    async def scenario() -> None:
        await box.refresh()
        assert named in box.message.text()
        assert "Edit as JSON" in box.message.text()
        assert not box.empty_label.isVisibleTo(box)  # not "no servers yet": a broken file
        dialog = await box.open_json()
        assert dialog is not None
        assert dialog.editor.toPlainText().replace(" ", "").replace("\n", "") == (
            broken.replace(" ", "")
        )  # the file as it is, to be fixed here
        dialog.editor.setPlainText('{"mcpServers": {"a": {"command": "x"}}}')
        assert await dialog.save_now()
        await arun.wait_until(lambda: box.table.rowCount() == 1, 10, "the fixed row")

    arun(scenario())


def test_a_test_runs_off_the_qt_thread(arun, box: ToolsBox, env: Env):
    """A server that never answers: the State says starting and Qt's own timers keep
    firing meanwhile; stopping it ends the Test with the reason."""
    from PySide6.QtCore import QTimer

    env.mcp_file.put("silent", {"command": sys.executable,
                                "args": ["-c", "import time; time.sleep(60)"]})  # fmt: skip
    ticks: list[int] = []
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(lambda: ticks.append(1))

    async def scenario() -> None:
        await box.refresh()
        timer.start()
        testing = box.test_selected()
        assert testing is not None
        await arun.wait_until(lambda: rows(box)[0][3] == "starting…", 10, "starting")
        before = len(ticks)
        await arun.wait_until(lambda: len(ticks) >= before + 20, 10, "Qt timers while it starts")
        assert not testing.done()
        await box.close_servers()
        await testing
        assert "stopped" in box.message.text()
        timer.stop()

    arun(scenario())


def test_secrets_a_hand_written_file_holds_are_moved_on_request(
    arun, box: ToolsBox, env: Env
):
    env.mcp_file.path.parent.mkdir(parents=True, exist_ok=True)
    env.mcp_file.path.write_text(json.dumps({"mcpServers": {
        "gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "ghp_plain", "TZ": "UTC"}},
    }}))  # fmt: skip

    async def scenario() -> None:
        await box.refresh()
        assert box.offers.plain_row.isVisibleTo(box)
        assert "holds 1 secret in plain text (gh: GITHUB_TOKEN)" in box.offers.plain_label.text()
        box.offers.seal_button.click()
        await arun.wait_until(lambda: not box.offers.plain_row.isVisibleTo(box), 10, "moved")
        assert "ghp_plain" not in env.mcp_file.path.read_text()
        assert env.store.get("mcp/gh/env/GITHUB_TOKEN") == "ghp_plain"
        assert "refers to the secret store" in box.message.text()

    arun(scenario())


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_text_of_a_full_box_is_readable_in_both_themes(
    arun, box: ToolsBox, env: Env, theme: str
):
    from PySide6.QtCore import QPoint, QRect
    from PySide6.QtGui import QPalette
    from PySide6.QtWidgets import QLabel

    from hearth.ui.style.theme import apply_theme
    from hearth.ui.style.tokens import contrast_ratio
    from page_frame import AA, painted_background

    apply_theme(theme)
    cursor = env.home / ".cursor" / "mcp.json"
    cursor.parent.mkdir(parents=True)
    cursor.write_text(json.dumps({"mcpServers": {"fetch": {"command": "uvx"}}}))
    env.mcp_file.path.parent.mkdir(parents=True, exist_ok=True)
    env.mcp_file.path.write_text(json.dumps({"mcpServers": {
        "quits": {"command": sys.executable, "args": ["-c", ""]},
        "gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "plain"}},
    }}))  # fmt: skip
    env.permissions.allow("gh", "search")

    async def scenario() -> None:
        await box.refresh()
        await box.test("quits")

    arun(scenario())
    image = box.grab().toImage()
    failures, checked = [], []
    for label in box.findChildren(QLabel):
        if not (label.isVisibleTo(box) and label.text() and label.pixmap().isNull()):
            continue
        rect = QRect(label.mapTo(box, QPoint(0, 0)), label.size())
        color = label.palette().color(QPalette.ColorRole.WindowText).name()
        ratio = contrast_ratio(color, painted_background(image, rect))
        checked.append(label.text())
        if ratio < AA:
            failures.append(f"{label.text()[:40]!r}: {ratio:.2f}")
    assert not failures, failures
    assert any("Cursor" in text for text in checked)
    assert any("in plain text" in text for text in checked)
    assert any("can't be used" in text for text in checked)  # the failed Test's message
