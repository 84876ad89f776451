"""The docs' screenshots of tools and documents in the chat (issue 24), from the real app:
the tool-call approval dialog (server, tool, every argument), a chat with its document
chips, a reply's sources and a tool call folded open, and Settings → Tools with a
configured server and a standing permission; both themes, saved as
``tool-approval-<theme>.png``, ``chat-documents-<theme>.png`` and
``settings-tools-<theme>.png`` (see ``test_screenshots.py`` for HEARTH_SAVE_DOCS_SCREENSHOT).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QUrl
from pytestqt.qtbot import QtBot

from hearth.chats import ApprovedBy, ChatStore, ToolCallRecord, ToolOutcome
from hearth.chats.attachments import PassageHit
from hearth.chats.doc_parse import ParsedDocument, Section
from hearth.supervisor import WorkerState
from hearth.tools.chat_loop import ToolRequest
from hearth.tools.mcp_config import default_config_path
from hearth.tools.permissions import ToolPermissions
from hearth.ui.chat.tool_approval import ApprovalDialog
from hearth.ui.chat.tool_fold import TOOL_SCHEME
from hearth.ui.shell.main_window import MainWindow
from hearth.ui.style.theme import apply_theme
from screenshot_saving import SIZE, THEMES, fit_dialog, save_shot

pytestmark = pytest.mark.ui

DOC_QUESTION = "Who was harbour master of Port Elwyn, and from when?"
DOC_ANSWER = (
    "**Marisol Quint** was appointed harbour master of Port Elwyn in **1987** "
    "(handbook, page 214). The staff list in your notes still names her in that role."
)
TIME_QUESTION = "It's 4:30 pm in Lisbon. What time is that in Tokyo?"
TIME_ARGUMENTS = json.dumps(
    {"source_timezone": "Europe/Lisbon", "time": "16:30", "target_timezone": "Asia/Tokyo"}
)
TIME_RESULT = json.dumps(
    {
        "source": {"timezone": "Europe/Lisbon", "datetime": "2026-06-12T16:30:00+01:00"},
        "target": {"timezone": "Asia/Tokyo", "datetime": "2026-06-13T00:30:00+09:00"},
        "time_difference": "+8.0h",
    },
    indent=2,
)
TIME_ANSWER = "4:30 pm in Lisbon is **0:30 am the next day** in Tokyo (8 hours ahead)."


def _documents_and_tools_chat(store: ChatStore) -> int:
    """A chat with two documents (one indexed, one whole), a reply with its sources and
    a reply that called a tool, as the store keeps them."""
    conv = store.create_conversation("Port Elwyn handbook")
    handbook = ParsedDocument(
        "handbook.pdf",
        "pdf",
        tuple(Section(f"Page {n}: the team reviewed the harbour schedule.", page=n)
              for n in range(1, 301)),
        pages=300,
    )  # fmt: skip
    store.attachments.add(conv.id, handbook, "indexed")
    notes = ParsedDocument("staff-notes.md", "text", (Section("Harbour staff, 1990.", line=1),))
    store.attachments.add(conv.id, notes, "inline")
    store.add_message(conv.id, "user", DOC_QUESTION)
    answer = store.add_message(conv.id, "assistant", DOC_ANSWER)
    store.attachments.add_sources(answer.id, [
        PassageHit(0, "handbook.pdf", "Marisol Quint was appointed harbour master of Port"
                   " Elwyn in 1987.", 214, None, 0.9),
        PassageHit(0, "handbook.pdf", "The harbour master keeps the tide tables.", 37, None, 0.4),
        PassageHit(0, "staff-notes.md", "Harbour master: M. Quint.", None, 12, 0.3),
    ])  # fmt: skip
    store.add_message(conv.id, "user", TIME_QUESTION)
    reply = store.add_message(conv.id, "assistant", TIME_ANSWER)
    store.tool_calls.add(reply.id, ToolCallRecord(
        0, 0, "call-1", "time", "convert_time", TIME_ARGUMENTS, TIME_RESULT, ToolOutcome.OK,
        0.42, ApprovedBy.ONCE,
    ))  # fmt: skip
    return conv.id


def test_tool_and_document_screenshots_in_both_themes(
    qtbot: QtBot, arun, tmp_path: Path, offline_window: MainWindow, tiny_model_q8: Path
) -> None:
    """The approval dialog (server, tool, every argument) and a chat with its document
    chips, a reply's sources folded open and a tool call folded open, in both themes:
    ``tool-approval-<theme>.png`` and ``chat-documents-<theme>.png``."""
    window = offline_window
    window.resize(*SIZE)
    window.show()
    view = window.chat_view

    def link(prefix: str) -> str:
        block = view.transcript.document().begin()
        while block.isValid():
            fragments = block.begin()
            while not fragments.atEnd():
                fmt = fragments.fragment().charFormat()
                if fmt.isAnchor() and fmt.anchorHref().startswith(prefix):
                    return fmt.anchorHref()
                fragments += 1
            block = block.next()
        raise AssertionError(f"no {prefix} link")

    async def scenario() -> None:
        window.open_model(tiny_model_q8)  # as in use: a model in the top bar
        await arun.wait_until(
            lambda: window.supervisor.status.state is WorkerState.READY, 120, "the model"
        )
        cid = await window.chats_db.run(_documents_and_tools_chat)
        await window.sidebar.refresh()
        await window.chat.open_conversation(cid)
        await arun.wait_until(lambda: len(view.documents.chips) == 2, 10, "the chips")
        view.transcript.anchorClicked.emit(QUrl(link("msg:sources:")))
        view.transcript.anchorClicked.emit(QUrl(link(TOOL_SCHEME)))
        text = view.transcript_text()
        assert "[1] handbook.pdf, page 214" in text and "staff-notes.md, line 12" in text
        assert '"target_timezone": "Asia/Tokyo"' in text and '"time_difference"' in text
        assert "Called convert_time · time · 0.42 s · allowed once" in text
        chips = [chip.label.text() for chip in view.documents.chips.values()]
        assert chips[0].startswith("handbook.pdf · indexed") and "staff-notes.md" in chips[1]
        request = ToolRequest("time", "convert_time", TIME_ARGUMENTS, json.loads(TIME_ARGUMENTS))
        dialog = ApprovalDialog(request, window)
        dialog.show()
        for theme in THEMES:
            apply_theme(theme)
            await asyncio.sleep(0.05)  # palette events
            view.transcript.verticalScrollBar().setValue(0)
            await asyncio.sleep(0.05)
            save_shot(window, tmp_path, f"chat-documents-{theme}")
            fit_dialog(dialog, SIZE)
            await asyncio.sleep(0.05)
            assert dialog.arguments.toPlainText() == request.pretty_arguments  # all of it
            save_shot(dialog, tmp_path, f"tool-approval-{theme}")
        dialog.close()

    arun(scenario())


def test_settings_tools_screenshot_in_both_themes(
    qtbot: QtBot, arun, tmp_path: Path, offline_window: MainWindow
) -> None:
    """Settings → Tools with a stdio server (the real ``mcp-server-time``, started by
    Test so its State says what it offers), an HTTP server (off) and a standing permission:
    ``settings-tools-<theme>.png``."""
    time_server = str(Path(sys.executable).parent / "mcp-server-time")
    default_config_path().write_text(json.dumps({"mcpServers": {
        "time": {"command": time_server, "args": ["--local-timezone", "Europe/Lisbon"]},
        "notes": {"url": "http://127.0.0.1:8765/mcp", "disabled": True},
    }}), encoding="utf-8")  # fmt: skip
    ToolPermissions().allow("time", "get_current_time")
    window = offline_window
    window.resize(*SIZE)
    window.show()
    page = window.extras.settings_page
    box = page.tools_box

    async def scenario() -> None:
        window.show_page("Settings")
        page.show_section("Tools (MCP servers)")
        await arun.wait_until(lambda: box.table.rowCount() == 2, 20, "the servers")
        await arun.wait_until(lambda: box.permissions.loaded, 20, "the permissions")
        box.select("time")
        await box.test("time")
        assert box.state_text("time").startswith("running · "), box.state_text("time")
        page.show_section("Tools (MCP servers)")
        for theme in THEMES:
            apply_theme(theme)
            await asyncio.sleep(0.05)  # palette events
            # the table refits to the theme's padding: both servers in view, no scrollbar
            await arun.wait_until(
                lambda: not box.table.verticalScrollBar().isVisible(), 5, "both servers in view"
            )
            save_shot(window, tmp_path, f"settings-tools-{theme}")
        await box.close_servers()

    arun(scenario(), timeout=180)
