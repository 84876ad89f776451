"""The Tools menu and the approval dialog, without a model: a model whose template lists
no tools is offered none, the context warning past a quarter, and arguments shown whole."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from hearth.tools import ToolPermissions
from hearth.tools.chat_loop import Approval, ToolRequest
from hearth.tools.chat_tools import ChatTools
from hearth.ui.chat.tool_approval import ApprovalDialog, ask_approval
from hearth.ui.chat.tool_menu import NO_TOOLS, READING, ToolsMenu, calls_tools
from hearth.ui.chat.view import ChatView
from hearth.ui.tasks import TaskSet
from mcp_testing import TOY

pytestmark = pytest.mark.ui


def _menu(
    qtbot: QtBot, tmp_path: Path, context: list[int]
) -> tuple[ToolsMenu, ChatTools, ChatView]:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"toy": {"command": sys.executable,
                                                         "args": [TOY]}}}))  # fmt: skip
    tools = ChatTools(config, ToolPermissions(tmp_path / "p.json"), log_dir=tmp_path)
    parent = ChatView()
    qtbot.addWidget(parent)
    menu = ToolsMenu(tools, TaskSet(), lambda: None, lambda: context[0], parent)
    return menu, tools, parent  # the caller keeps the parent: the menu is its child


def test_the_context_warning_and_a_model_without_tools(
    qtbot: QtBot, arun, tmp_path: Path, tiny_model_q8: Path
) -> None:
    context = [100_000]
    menu, tools, view = _menu(qtbot, tmp_path, context)

    async def scenario() -> None:
        try:
            menu.menu.aboutToShow.emit()
            # mcp.json is read on a worker thread: the menu says so until it is read.
            assert [a.text() for a in menu.menu.actions()] == [READING]
            await arun.wait_until(lambda: "toy" in tools.known, 60, "the toy server's tools")
            menu.menu.aboutToShow.emit()
            (every,) = [a for a in menu.menu.actions() if a.text() == "All tools of toy"]
            every.trigger()
            assert {t for _s, t in tools.choice} == {"add", "nap", "die", "env", "fail"}
            assert menu.warning is None and "5 offered" in menu.button.toolTip()
            assert view.composer.findChild(type(menu.button), "toolsButton") is menu.button
            context[0] = 400  # the schemas take more than 100 tokens
            menu.menu.aboutToShow.emit()
            assert menu.warning is not None and "quarter of this model's context" in menu.warning
            assert any(a.text() == menu.warning for a in menu.menu.actions())

            assert not calls_tools(tiny_model_q8)  # ChatML without tools
            assert not await menu.offered_for(tiny_model_q8, remote=False)
            menu.menu.aboutToShow.emit()
            texts = [a.text() for a in menu.menu.actions()]
            assert NO_TOOLS in texts
            assert not any(a.isEnabled() for a in menu.menu.actions() if a.isCheckable())
            assert await menu.offered_for(tiny_model_q8, remote=True)  # its engine decides
        finally:
            await tools.aclose()

    arun(scenario())


def test_the_dialog_shows_the_arguments_whole_and_esc_denies(qtbot: QtBot, arun) -> None:
    long = "x" * 5000 + "-the-end"
    request = ToolRequest("files", "write", json.dumps({"path": "/tmp/a", "text": long}),
                          {"path": "/tmp/a", "text": long})  # fmt: skip
    parent = QWidget()
    qtbot.addWidget(parent)

    async def scenario() -> Approval:
        task = asyncio.ensure_future(ask_approval(parent, request))
        await arun.wait_until(lambda: parent.findChild(ApprovalDialog) is not None, 5, "dialog")
        dialog = parent.findChild(ApprovalDialog)
        assert dialog is not None
        shown = dialog.arguments.toPlainText()
        assert shown == json.dumps(request.parsed, indent=2) and shown.endswith('-the-end"\n}')
        assert dialog.deny_button.isDefault()
        assert dialog.always_button.text() == "Always allow this tool of this server"
        qtbot.keyClick(dialog, Qt.Key.Key_Escape)
        return await task

    assert arun(scenario()) is Approval.DENY
