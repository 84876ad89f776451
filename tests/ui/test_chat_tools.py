"""Tools in the real chat: a scripted Qwen3 (its real template) calls a tool of a real
MCP server (``mcp-server-time`` from PyPI, or the SDK's toy server), the approval dialog
shows the full arguments, the result goes back to the model and the reply ends with the
model's answer; the calls are folded in the transcript with their time and kept in
SQLite. Deny, a timeout, a crashed server, the step limit and Stop (during approval and
during a call) each end as a folded call and the chat goes on.

Most tests' scripted model answers every prompt with the same tool call, so they set
the step limit: after that many rounds the model is asked once more with no tools, and
its text (the call, as plain text) is the turn's answer. The first test's model answers
for real once a tool's result is in its prompt (gguf_scripted's ``Then``: Qwen3 wraps a
result in ``<tool_response>``), so its loop ends on its own, well before the limit.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtWidgets import QApplication, QLabel
from pytestqt.qtbot import QtBot

from gguf_scripted import Family, Then, write_scripted
from hearth.chats import ApprovedBy, ToolOutcome
from hearth.config.paths import default_paths
from hearth.supervisor import LoadOptions, WorkerState
from hearth.tools import ToolPermissions
from hearth.ui.chat.tool_approval import ApprovalDialog
from hearth.ui.chat.turns import ChatSettings
from hearth.ui.shell.main_window import MainWindow
from mcp_testing import TOY

pytestmark = pytest.mark.ui

QWEN3 = Family(user_defined=("<think>", "</think>", "<tool_call>", "</tool_call>"))
TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")
SERVERS = {
    "time": {"command": TIME_SERVER, "args": ["--local-timezone", "UTC"]},
    "toy": {"command": sys.executable, "args": [TOY]},
}


ANSWER = "The clock in UTC answered; that is the time now."


def _model(
    tmp_path: Path,
    templates: Path,
    name: str,
    arguments: dict[str, object],
    then: Then | None = None,
) -> Path:
    call = json.dumps({"name": name, "arguments": arguments})
    return write_scripted(
        tmp_path / f"qwen3-{name}{'-then' if then else ''}.gguf",
        template=(templates / "Qwen-Qwen3-0.6B.jinja").read_text(encoding="utf-8"),
        family=QWEN3,
        reply=f"<tool_call>\n{call}\n</tool_call>",
        then=then,
    )


def _window(qtbot: QtBot, tmp_path: Path, *, step_limit: int, call_timeout: float = 30.0):
    default_paths().config_dir.joinpath("mcp.json").write_text(
        json.dumps({"mcpServers": SERVERS}), encoding="utf-8"
    )
    window = MainWindow(
        log_dir=tmp_path / "logs",
        load_options=LoadOptions(n_ctx=4096, n_parallel=1),
        chat_settings=ChatSettings(temperature=0.0, max_tokens=96),
        chats_db=tmp_path / "chats.db",
    )
    qtbot.addWidget(window)
    window.show()
    window.chat.tools.step_limit = step_limit
    window.chat.tools.call_timeout = call_timeout
    return window


async def _ready(arun, window: MainWindow, model: Path) -> None:
    window.open_model(model)
    await arun.wait_until(
        lambda: window.supervisor.status.state is WorkerState.READY, 120, "the model"
    )


async def _tick(arun, window: MainWindow, server: str, tool: str) -> None:
    """Tick ``tool`` in the composer's Tools menu, as a user does."""
    menu = window.chat.tool_menu.menu
    menu.aboutToShow.emit()  # what opening it does: lists the servers, starts them
    await arun.wait_until(lambda: server in window.chat.tools.known, 60, f"{server}'s tools")
    menu.aboutToShow.emit()
    (action,) = [a for a in menu.actions() if a.text() == tool]
    action.trigger()
    assert (server, tool) in window.chat.tools.choice


async def _closing(window: MainWindow, scenario: Coroutine[Any, Any, None]) -> None:
    """Run the test, then stop the MCP servers it started (on this loop, in their tasks)."""
    try:
        await scenario
    finally:
        await window.chat.tools.aclose()


def _dialog() -> ApprovalDialog | None:
    found = [w for w in QApplication.topLevelWidgets() if isinstance(w, ApprovalDialog)]
    return next((d for d in found if d.isVisible()), None)


async def _approve(arun, click: Callable[[ApprovalDialog], object]) -> ApprovalDialog:
    await arun.wait_until(lambda: _dialog() is not None, 60, "the approval dialog")
    dialog = _dialog()
    assert dialog is not None
    click(dialog)
    return dialog


def _fold_link(view) -> str:
    """The href of the first folded tool call in the transcript."""
    block = view.transcript.document().begin()
    while block.isValid():
        fragments = block.begin()
        while not fragments.atEnd():
            fmt = fragments.fragment().charFormat()
            if fmt.isAnchor() and fmt.anchorHref().startswith("toolcall:"):
                return fmt.anchorHref()
            fragments += 1
        block = block.next()
    raise AssertionError("no folded tool call")


def _reply(window: MainWindow):
    cid = window.chat.conversation_id
    assert cid is not None
    return window.chats_db.sync(lambda s: s.messages(cid))[-1]


def test_the_model_answers_after_the_result_and_the_loop_ends_itself(
    qtbot: QtBot, arun, tmp_path: Path, llama_cpp_templates: Path
) -> None:
    then = Then("<tool_response>", ANSWER)
    model = _model(tmp_path, llama_cpp_templates, "get_current_time", {"timezone": "UTC"}, then)
    window = _window(qtbot, tmp_path, step_limit=10)  # the default: not what ends it
    chat, view = window.chat, window.chat_view
    outcomes: list[str] = []
    chat.generation_finished.connect(outcomes.append)

    async def scenario() -> None:
        await _ready(arun, window, model)
        await _tick(arun, window, "time", "get_current_time")
        chat.send("What time is it in UTC?")
        dialog = await _approve(arun, lambda d: None)
        assert dialog.arguments.toPlainText() == '{\n  "timezone": "UTC"\n}'
        dialog.once_button.click()
        await arun.wait_until(lambda: outcomes, 90, "the answer")
        assert outcomes == ["done"]
        text = view.transcript_text()
        assert ANSWER in text and "Called get_current_time · time · " in text
        assert " s · allowed once" in text  # the time taken, and how it was allowed
        assert "rounds of tool calls" not in text  # ended by the answer, not the limit
        reply = _reply(window)
        (call,) = reply.tool_calls  # one round: the answer needed no second call
        assert (call.outcome, call.approval) == (ToolOutcome.OK, ApprovedBy.ONCE)
        assert json.loads(call.result)["timezone"] == "UTC"
        assert reply.content.endswith(ANSWER) and "<tool_call>" not in reply.content
        sent = chat.conversation
        assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant"]
        assert sent[2]["content"] == call.result and sent[3]["content"] == ANSWER

        # Kept: a reopened chat draws the call and the answer again, and exports both.
        cid = chat.conversation_id
        assert cid is not None
        chat.new_chat()
        assert ANSWER not in view.transcript_text()
        await chat.open_conversation(cid)
        text = view.transcript_text()
        assert ANSWER in text and "Called get_current_time · time" in text
        assert chat.conversation == sent
        markdown = window.chats_db.sync(lambda s: s.export_markdown(cid))
        assert "Tool call: get_current_time · time · ok · " in markdown
        assert "allowed once" in markdown and markdown.rstrip().endswith(ANSWER)

    arun(_closing(window, scenario()))


def test_approve_result_and_answer_then_reopened_folded(
    qtbot: QtBot, arun, tmp_path: Path, llama_cpp_templates: Path
) -> None:
    model = _model(tmp_path, llama_cpp_templates, "get_current_time", {"timezone": "UTC"})
    window = _window(qtbot, tmp_path, step_limit=1)
    chat, view = window.chat, window.chat_view
    outcomes: list[str] = []
    chat.generation_finished.connect(outcomes.append)

    async def scenario() -> None:
        await _ready(arun, window, model)
        await chat.tool_menu.check_model(window.supervisor.model_path, remote=False)
        assert chat.tool_menu.supported and chat.tool_menu.button.isEnabled()
        await _tick(arun, window, "time", "get_current_time")
        chat.send("What time is it in UTC?")
        dialog = await _approve(arun, lambda d: None)
        heading = dialog.findChild(QLabel, "toolApprovalHeading")
        assert heading is not None and "get_current_time" in heading.text()
        assert "time" in heading.text()
        assert dialog.arguments.toPlainText() == '{\n  "timezone": "UTC"\n}'  # whole
        assert dialog.arguments.isReadOnly()
        dialog.once_button.click()
        await arun.wait_until(lambda: outcomes, 90, "the reply")
        assert outcomes == ["done"]
        text = view.transcript_text()
        assert "Called get_current_time · time · " in text and " s" in text
        assert '"datetime"' not in text  # folded: the result shows once opened
        reply = _reply(window)
        (call,) = reply.tool_calls
        assert (call.server, call.tool) == ("time", "get_current_time")
        assert call.outcome is ToolOutcome.OK
        assert json.loads(call.result)["timezone"] == "UTC"
        assert call.seconds is not None and call.seconds > 0
        assert "get_current_time" in reply.content  # the answer, asked with no tools
        # The next turn sends the call and its result back as the model saw them.
        sent = chat.conversation
        assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant"]
        assert sent[2]["content"] == call.result
        assert not ToolPermissions().allows("time", "get_current_time")  # allowed once

        # Reopened: the fold is drawn again; opening it shows the arguments and result.
        cid = chat.conversation_id
        assert cid is not None
        chat.new_chat()
        await chat.open_conversation(cid)
        text = view.transcript_text()
        assert "Called get_current_time · time" in text and '"datetime"' not in text
        assert chat.tools.choice == {("time", "get_current_time")}  # the chat's own
        view.transcript.anchorClicked.emit(QUrl(_fold_link(view)))
        text = view.transcript_text()
        assert '"timezone": "UTC"' in text and '"datetime"' in text

    arun(_closing(window, scenario()))


def test_deny_is_a_result_the_model_sees(
    qtbot: QtBot, arun, tmp_path: Path, llama_cpp_templates: Path
) -> None:
    model = _model(tmp_path, llama_cpp_templates, "add", {"a": 2, "b": 40})
    window = _window(qtbot, tmp_path, step_limit=1)
    outcomes: list[str] = []
    window.chat.generation_finished.connect(outcomes.append)

    async def scenario() -> None:
        await _ready(arun, window, model)
        await _tick(arun, window, "toy", "add")
        window.chat.send("Add two and forty.")
        await _approve(arun, lambda d: d.deny_button.click())
        await arun.wait_until(lambda: outcomes, 90, "the reply")
        (call,) = _reply(window).tool_calls
        assert (call.outcome, call.result, call.seconds) == (
            ToolOutcome.DENIED, "The user denied this tool call.", None
        )  # fmt: skip
        assert "Denied add · toy" in window.chat_view.transcript_text()
        assert outcomes == ["done"]

    arun(_closing(window, scenario()))


def test_a_timeout_and_always_allow(
    qtbot: QtBot, arun, tmp_path: Path, llama_cpp_templates: Path
) -> None:
    model = _model(tmp_path, llama_cpp_templates, "nap", {"seconds": 30})
    window = _window(qtbot, tmp_path, step_limit=2, call_timeout=1.0)
    outcomes: list[str] = []
    window.chat.generation_finished.connect(outcomes.append)

    async def scenario() -> None:
        await _ready(arun, window, model)
        await _tick(arun, window, "toy", "nap")
        window.chat.send("Rest a while.")
        await _approve(arun, lambda d: d.always_button.click())
        await arun.wait_until(lambda: outcomes, 120, "the reply")
        reply = _reply(window)
        assert len(reply.tool_calls) == 2  # the second round ran without asking
        for call in reply.tool_calls:
            assert call.outcome is ToolOutcome.ERROR
            assert "did not answer within 1 s" in call.result
        assert ToolPermissions().allows("toy", "nap")
        text = window.chat_view.transcript_text()
        assert text.count("Failed nap · toy") == 2
        assert "stopped after 2 rounds of tool calls" in text  # the step limit
        assert outcomes == ["done"]

    arun(_closing(window, scenario()))


def test_a_crashed_server_is_said_and_the_chat_goes_on(
    qtbot: QtBot, arun, tmp_path: Path, llama_cpp_templates: Path
) -> None:
    model = _model(tmp_path, llama_cpp_templates, "die", {})
    window = _window(qtbot, tmp_path, step_limit=1)
    outcomes: list[str] = []
    window.chat.generation_finished.connect(outcomes.append)

    async def scenario() -> None:
        await _ready(arun, window, model)
        await _tick(arun, window, "toy", "die")
        window.chat.send("End it.")
        await _approve(arun, lambda d: d.once_button.click())
        await arun.wait_until(lambda: outcomes, 90, "the reply")
        (call,) = _reply(window).tool_calls
        assert call.outcome is ToolOutcome.ERROR and "crashed" in call.result
        assert "Failed die · toy" in window.chat_view.transcript_text()
        outcomes.clear()
        window.chat.send("Again.")  # the server is started again for the next call
        await _approve(arun, lambda d: d.deny_button.click())
        await arun.wait_until(lambda: outcomes, 90, "the second reply")
        assert outcomes == ["done"]

    arun(_closing(window, scenario()))


def test_stop_during_approval_and_during_a_call(
    qtbot: QtBot, arun, tmp_path: Path, llama_cpp_templates: Path
) -> None:
    model = _model(tmp_path, llama_cpp_templates, "nap", {"seconds": 20})
    window = _window(qtbot, tmp_path, step_limit=3)
    chat = window.chat
    outcomes: list[str] = []
    chat.generation_finished.connect(outcomes.append)

    async def scenario() -> None:
        await _ready(arun, window, model)
        await _tick(arun, window, "toy", "nap")
        chat.send("Rest.")
        await _approve(arun, lambda d: None)
        window.chat_view.stop_button.click()
        await arun.wait_until(lambda: outcomes, 30, "the stop")
        assert outcomes == ["stopped"] and _dialog() is None  # closed by Stop
        (call,) = _reply(window).tool_calls
        assert call.outcome is ToolOutcome.STOPPED

        outcomes.clear()
        chat.send("Rest again.")
        await _approve(arun, lambda d: d.once_button.click())
        await arun.wait_until(
            lambda: window.chat_view.stats_label.text().startswith("Running nap"), 30, "the call"
        )
        window.chat_view.stop_button.click()
        await arun.wait_until(lambda: outcomes, 10, "the stop during the call")
        assert outcomes == ["stopped"]
        (call,) = _reply(window).tool_calls
        assert call.outcome is ToolOutcome.STOPPED and call.seconds is not None
        assert "Stopped nap · toy" in window.chat_view.transcript_text()

    arun(_closing(window, scenario()))
