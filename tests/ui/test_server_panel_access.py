"""Server panel: keys that cannot be read keep the endpoint off, and the panel says why."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from hearth.config.paths import default_paths
from hearth.config.settings import Settings, save_settings
from hearth.supervisor import WorkerState
from hearth.ui.shell.main_window import MainWindow
from server_process import free_port

pytestmark = pytest.mark.ui


def test_unreadable_keys_keep_the_endpoint_off(
    qtbot: QtBot, arun, tiny_model_q8: Path, tmp_path: Path, locked_keyring
) -> None:
    port = free_port()
    save_settings(
        Settings(endpoint_enabled=True, endpoint_port=port, endpoint_require_key=True),
        default_paths().settings_file,
    )
    window = MainWindow(log_dir=tmp_path / "logs", chats_db=tmp_path / "chats.db")
    qtbot.addWidget(window)
    window.show()
    panel = window.extras.server_panel
    assert panel.enabled_check.isChecked() and panel.require_key_check.isChecked()

    async def scenario() -> None:
        window.open_model(tiny_model_q8)
        await arun.wait_until(
            lambda: window.supervisor.status.state in (WorkerState.READY, WorkerState.ERROR),
            120,
            "the load",
        )
        # The model is there for the app itself; the endpoint stayed off, with the fix.
        assert window.supervisor.status.state is WorkerState.READY
        assert not window.supervisor.endpoint.enabled
        assert window.supervisor.endpoint_port is None
        await arun.wait_until(lambda: not panel.enabled_check.isChecked(), 10, "the switch")
        text = panel.status_label.text()
        assert text.startswith("Off: ") and "Cannot read the API keys" in text

    arun(scenario(), timeout=200)
