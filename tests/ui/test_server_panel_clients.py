"""The Server page's ready-to-paste configs: a tab per client, coding agents included,
each the text ``hearth config <client>`` prints (core.client_config)."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QGuiApplication
from pytestqt.qtbot import QtBot

from hearth.core.client_config import SNIPPETS
from hearth.supervisor import Supervisor
from hearth.ui.app_settings import SettingsStore
from hearth.ui.pages.server.panel import ServerPanel

pytestmark = pytest.mark.ui


def test_a_tab_per_client_with_the_cli_text(qtbot: QtBot, arun) -> None:
    panel = ServerPanel(Supervisor(), SettingsStore())
    qtbot.addWidget(panel)
    tabs = [panel.snippet_tabs.tabText(i) for i in range(panel.snippet_tabs.count())]
    for title in ("Claude Code", "Codex CLI", "Copilot", "llama.vscode", "Continue", "curl"):
        assert title in tabs
    assert set(panel.snippet_views) == set(SNIPPETS)
    for kind, view in panel.snippet_views.items():
        assert SNIPPETS[kind](panel.endpoint()) in view.toPlainText(), kind
    panel.copy_snippet("claude-code")
    assert "ANTHROPIC_BASE_URL" in QGuiApplication.clipboard().text()
    assert panel.copy_buttons["claude-code"].text() == "Copied"  # where the user looks
    qtbot.waitUntil(lambda: panel.copy_buttons["claude-code"].text() == "Copy Claude Code config")
    panel.shutdown()
