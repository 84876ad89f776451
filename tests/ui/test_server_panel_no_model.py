"""Server panel: "Serve to other apps" with no model loaded still serves, as
``hearth serve`` without ``--model`` does: it lists the library and loads a model when a
request names one."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from pytestqt.qtbot import QtBot

from hearth.config.paths import default_paths
from hearth.config.settings import Settings, save_settings
from hearth.library.library import Library
from hearth.supervisor import WorkerState
from hearth.ui.shell.main_window import MainWindow
from server_process import free_port

pytestmark = pytest.mark.ui


def test_the_endpoint_listens_with_nothing_loaded(
    qtbot: QtBot, arun, tiny_model_q8: Path, tmp_path: Path
) -> None:
    Library().import_in_place(tiny_model_q8)
    window = MainWindow(log_dir=tmp_path / "logs", chats_db=tmp_path / "chats.db")
    qtbot.addWidget(window)
    window.show()
    panel = window.extras.server_panel
    port = free_port()
    assert window.supervisor.process is None and not panel.enabled_check.isChecked()

    async def scenario() -> None:
        panel.port_spin.setValue(port)
        panel.enabled_check.setChecked(True)  # the user's click: applies at once
        await arun.wait_until(lambda: window.supervisor.endpoint_port == port, 120, "listening")
        await arun.wait_until(lambda: panel.endpoint_box.state_tone() == "on", 10, "the chip")
        assert panel.endpoint_box.state_chip.text().endswith("Running")
        assert window.supervisor.status.state is WorkerState.READY
        assert not window.supervisor.model_id  # nothing loaded
        assert "names a library model loads it" in panel.endpoint_box.status_label.text()
        url = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            listed = (await client.get("/v1/models")).json()["data"]
            assert [m["id"] for m in listed] == ["hearth-tiny-Q8_0"]
            tags = (await client.get("/api/tags")).json()["models"]
            assert [t["name"] for t in tags] == ["hearth-tiny-Q8_0:latest"]
            reply = await client.post(
                "/v1/chat/completions",
                json={"model": "hearth-tiny-Q8_0", "max_tokens": 2,
                      "messages": [{"role": "user", "content": "hi"}]},
            )  # fmt: skip
            assert reply.status_code == 200, reply.text
            assert reply.json()["model"] == "hearth-tiny-Q8_0"
            assert (await client.get("/health")).json()["model"] == "hearth-tiny-Q8_0"

    try:
        arun(scenario(), timeout=200)
    finally:
        window.supervisor.stop_sync()


def test_an_endpoint_left_on_serves_at_launch(
    qtbot: QtBot, arun, tiny_model_q8: Path, tmp_path: Path
) -> None:
    """Turned on in an earlier run, the endpoint listens as soon as the app starts,
    before any model is loaded (it used to say "Waiting" until the first load)."""
    Library().import_in_place(tiny_model_q8)
    port = free_port()
    save_settings(
        Settings(endpoint_enabled=True, endpoint_port=port), default_paths().settings_file
    )
    window = MainWindow(log_dir=tmp_path / "logs", chats_db=tmp_path / "chats.db")
    qtbot.addWidget(window)
    window.show()

    async def scenario() -> None:
        await arun.wait_until(lambda: window.supervisor.endpoint_port == port, 120, "listening")
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            listed = (await client.get("/v1/models")).json()["data"]
            assert [m["id"] for m in listed] == ["hearth-tiny-Q8_0"]

    try:
        arun(scenario(), timeout=200)
    finally:
        window.supervisor.stop_sync()
