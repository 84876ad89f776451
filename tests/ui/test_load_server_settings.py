"""Load dialog, Server panel, Settings page and first run, against a real worker."""

from __future__ import annotations

import contextlib
import io
import socket
from pathlib import Path

import httpx
import pytest
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from hearth.config.settings import load_settings
from hearth.hardware import GpuInfo, SystemMemory, estimate_memory
from hearth.hardware.probe import CUDA_RESERVE_BYTES
from hearth.supervisor import WorkerState
from hearth.ui.app_settings import SettingsStore
from hearth.ui.chat.panels import COMPACT_WIDTH
from hearth.ui.dialogs.load_dialog import LoadDialog
from hearth.ui.dialogs.load_errors import plain_load_error
from hearth.ui.dialogs.load_placement import place_layers
from hearth.ui.pages.server.panel import LAN_NEEDS_KEY, LAST_KEY_REVOKED
from hearth.ui.pages.server.request_log_table import COL_STATUS
from hearth.ui.shell.main_window import MainWindow
from hearth.ui.style.theme import tokens_for

pytestmark = pytest.mark.ui

GIB = 1024**3


def _shot(widget: QWidget, tmp_path: Path, name: str) -> None:
    out = tmp_path / f"{name}.png"
    assert widget.grab().save(str(out))


@pytest.fixture
def window(qtbot: QtBot, tmp_path: Path) -> MainWindow:
    win = MainWindow(log_dir=tmp_path / "logs", chats_db=tmp_path / "chats.db")
    qtbot.addWidget(win)
    win.show()
    return win


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _settled(arun, window: MainWindow, timeout: float = 120) -> WorkerState:
    await arun.wait_until(
        lambda: (
            window.supervisor.status.state
            in (WorkerState.READY, WorkerState.ERROR, WorkerState.STOPPED)
            and not window.loading
        ),
        timeout,
        "the load to settle",
    )
    return window.supervisor.status.state


def test_load_dialog_estimate_autofit_options_cancel_eject(
    qtbot: QtBot, arun, window: MainWindow, tiny_model_q8: Path, tmp_path: Path
) -> None:
    store = window.extras.store
    model_key = str(tiny_model_q8.resolve())

    async def scenario() -> None:
        # Pass 1: a machine with a fake GPU, to judge the estimate and auto-fit.
        probe = LoadDialog(
            tiny_model_q8,
            store,
            system=SystemMemory(8 * GIB, 6 * GIB, 4, 8),
            parent=window,
        )
        await arun.wait_until(lambda: probe.meta is not None, 30, "the header")
        probe.ctx_spin.setValue(512)
        assert probe.meta is not None
        mem = estimate_memory(probe.meta, probe.plan(), gpu_offload=True)
        assert mem.n_layers >= 2
        half = place_layers(mem, mem.n_layers // 2, probe.system)  # type: ignore[arg-type]
        gpu = GpuInfo("Fake GPU", 4 * GIB, CUDA_RESERVE_BYTES + half.gpu_bytes, "cuda")
        probe.close()
        system = SystemMemory(8 * GIB, 6 * GIB, 4, 8, gpus=(gpu,))
        dialog = LoadDialog(tiny_model_q8, store, system=system, parent=window)
        dialog.show()
        await arun.wait_until(lambda: dialog.meta is not None, 30, "the header")
        n = dialog.gpu_slider.maximum()
        assert n == mem.n_layers

        # The estimate follows the slider and the context.
        dialog.gpu_slider.setValue(0)
        cpu_text = dialog.estimate_label.text()
        dialog.gpu_slider.setValue(n)
        full_text = dialog.estimate_label.text()
        assert cpu_text != full_text and "all layers on the GPU" in full_text
        ctx_before = dialog.placement()
        dialog.ctx_spin.setValue(512 if dialog.ctx_spin.value() > 512 else 2048)
        assert dialog.placement() != ctx_before
        assert dialog.estimate_label.text() != full_text

        # Auto-fit: the most layers that fit the (tiny) free GPU memory.
        dialog.ctx_spin.setValue(512)
        best = dialog.auto_fit()
        assert dialog.gpu_slider.value() == best
        assert 0 < best < n
        place = dialog.placement()
        assert place is not None and place.fits
        assert not place_layers(dialog.memory(), best + 1, system).fits  # type: ignore[arg-type]
        _shot(dialog, tmp_path, "load")
        dialog.close()

        # Pass 2: the window's own dialog (real hardware, CPU layers); options reach
        # the worker and are saved for this model.
        real = window.extras.show_load_dialog(tiny_model_q8)
        await arun.wait_until(lambda: real.meta is not None, 30, "the header")
        real.gpu_slider.setValue(0)
        real.ctx_spin.setValue(1024)
        real.parallel_spin.setValue(3)
        real.kv_combo.setCurrentText("q8_0")
        real.flash_combo.setCurrentText("on")
        real.mmap_check.setChecked(False)
        real.load_button.click()
        assert await _settled(arun, window) is WorkerState.READY, window.supervisor.status
        opts = window.supervisor.options
        assert (opts.n_ctx, opts.n_parallel, opts.cache_type_k, opts.use_mmap) == (
            1024,
            3,
            "q8_0",
            False,
        )
        client = window.supervisor.client
        assert client is not None
        status = await client.admin_status()
        assert len(status["slots"]) == 3
        (meta,) = await client.model_meta()
        assert meta.n_ctx == 1024
        saved = load_settings(store.path).model_load_options[model_key]
        assert saved["n_parallel"] == 3 and saved["cache_type_k"] == "q8_0"
        assert window.extras.saved_options(tiny_model_q8) == opts

        # Eject: the worker stops and nothing is loaded.
        assert window.extras.eject_action.isEnabled()
        window.extras.eject_action.trigger()
        await arun.wait_until(
            lambda: window.supervisor.status.state is WorkerState.STOPPED, 30, "eject"
        )
        assert window.supervisor.process is None
        assert window.status_label.text() == "No model loaded"

        # Cancel a load in progress (the saved options are used again).
        window.open_model(tiny_model_q8)
        await arun.wait_until(window.extras.cancel_load_button.isVisible, 30, "the load to start")
        window.extras.cancel_load_button.click()
        assert await _settled(arun, window) is WorkerState.STOPPED
        assert window.supervisor.process is None
        assert not window.extras.cancel_load_button.isVisible()

        # A bad file: the banner says so in plain words.
        bad = tmp_path / "broken.gguf"
        bad.write_bytes(b"NOPE" + bytes(1024))
        window.open_model(bad)
        assert await _settled(arun, window) is WorkerState.ERROR
        assert "not a usable model" in window.banner_label.text()

    arun(scenario())


def test_plain_load_errors() -> None:
    assert "Not enough memory" in plain_load_error("ggml_cuda: failed to allocate 3 GiB")
    assert "not a usable model" in plain_load_error("x.gguf is not a GGUF model file")
    assert "GPU backend is missing" in plain_load_error("no GPU backend found")
    assert plain_load_error("something else") == "something else"


def test_server_panel_keys_endpoint_openai_log_revoke(
    qtbot: QtBot, arun, window: MainWindow, tiny_model_q8: Path, tmp_path: Path, file_keyring
) -> None:
    panel = window.extras.server_panel
    window.show_page("Server")

    async def scenario() -> None:
        await panel.refresh_keys()
        # LAN without a key is refused, with the reason.
        panel.lan_check.setChecked(True)
        assert not panel.lan_check.isChecked()
        assert panel.status_label.text() == LAN_NEEDS_KEY
        assert not window.supervisor.endpoint.lan

        window.open_model(tiny_model_q8)
        assert await _settled(arun, window) is WorkerState.READY

        # Create a key: shown once, copyable.
        panel.keys_box.key_name.setText("laptop")
        task = panel.create_key()
        assert task is not None
        await task
        key = panel.keys_box.new_key_field.text()
        assert key.startswith("hk-") and [k.name for k in panel.keys] == ["laptop"]
        panel.keys_box.copy_new_button.click()
        assert QGuiApplication.clipboard().text() == key
        # On loopback a key is needed only when asked for ("Require an API key").
        panel.require_key_check.setChecked(True)
        await arun.wait_until(lambda: window.supervisor.endpoint.require_key, 30, "the rule")

        # Endpoint on at a free port: it opens there live (the model stays), keys required.
        load_pid = window.supervisor.process.pid if window.supervisor.process else None
        port = _free_port()
        panel.port_spin.setValue(port)
        panel.enabled_check.setChecked(True)
        await arun.wait_until(
            lambda: window.supervisor.ready and window.supervisor.endpoint_port == port,
            120,
            "the endpoint to come up",
        )
        await arun.wait_until(lambda: "serving at" in panel.status_label.text(), 10, "status")
        assert window.supervisor.process is not None
        assert window.supervisor.process.pid == load_pid  # no relaunch, no reload
        panel.copy_buttons["openai"].click()
        snippet = QGuiApplication.clipboard().text()
        assert f"http://127.0.0.1:{port}/v1" in snippet and key in snippet
        snippet = snippet.replace('"Hello!"}]', '"Hello!"}], max_tokens=8')

        def run_snippet() -> str:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(snippet, {})
            return out.getvalue()

        # On this thread: the worker is another process, so blocking here is fine, and
        # Qt objects collected by a GC pass never get destroyed on a foreign thread.
        printed = run_snippet()
        assert isinstance(printed, str)
        async with httpx.AsyncClient(trust_env=False) as http:
            url = f"http://127.0.0.1:{port}/v1/models"
            assert (await http.get(url)).status_code == 401
            wrong = await http.get(url, headers={"Authorization": "Bearer hk-wrong"})
            assert wrong.status_code == 401
            ok = await http.get(url, headers={"Authorization": f"Bearer {key}"})
            assert ok.status_code == 200

        # The request log shows each request with its HTTP status: the snippet's chat
        # (with its tokens) and the refused ones, in red; never the key.
        table = panel.log_table

        def logged() -> list[tuple[str, str]]:
            requests, statuses = table.column_texts("Request"), table.column_texts("Status")
            return list(zip(requests, statuses, strict=True))

        # The three newest rows are ours (the app's own GET /v1/models, asking whether
        # the model sees images, came before them: waiting for any 200 row would race).
        ours = [("GET /v1/models", "200 OK")] + [("GET /v1/models", "401 Unauthorized")] * 2
        await arun.wait_until(lambda: logged()[:3] == ours, 15, "the request log")
        rows = logged()
        chat_row = next(
            i for i, (req, status) in enumerate(rows)
            if req == "POST /v1/chat/completions" and status.startswith("200 OK · ")
        )  # fmt: skip
        assert 0 <= int(table.column_texts("Completion")[chat_row]) <= 8
        assert int(table.column_texts("Prompt")[chat_row]) > 0
        assert table.column_texts("Model")[chat_row] == "hearth-tiny-Q8_0"
        red = tokens_for(table.palette()).danger
        assert table.item(1, COL_STATUS).foreground().color().name() == red
        assert table.item(chat_row, COL_STATUS).foreground().color().name() != red
        assert all(key not in str(r) for r in panel.requests)
        _shot(panel, tmp_path, "server")

        # Revoke the last key while one is required: the endpoint turns off (fail
        # closed) live, without reloading the model, and the key no longer opens it.
        pid = window.supervisor.process.pid if window.supervisor.process else None
        panel.keys_box.keys_table.selectRow(0)
        task = panel.revoke_selected_key()
        assert task is not None
        await task
        assert panel.keys == []
        assert panel.status_label.text() == LAST_KEY_REVOKED
        assert not panel.enabled_check.isChecked() and not window.supervisor.endpoint.enabled
        async with httpx.AsyncClient(trust_env=False) as http:
            url = f"http://127.0.0.1:{port}/v1/models"
            with pytest.raises(httpx.ConnectError):  # closed: nothing listens there now
                await http.get(url, headers={"Authorization": f"Bearer {key}"})
            # On again, no key required on loopback: live, same worker, same model.
            panel.enabled_check.setChecked(True)
            await arun.wait_until(lambda: "serving at" in panel.status_label.text(), 30, "on")
            assert (await http.get(url)).status_code == 200
        assert window.supervisor.process is not None and window.supervisor.process.pid == pid
        assert window.supervisor.ready

    arun(scenario(), timeout=300)


def test_settings_persist_and_first_run_once(
    qtbot: QtBot, arun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hearth.ui.welcome import llama_backend

    # The backend probe runs a child process; a fixed answer keeps this test quick.
    monkeypatch.setattr(
        llama_backend,
        "probe_backend",
        lambda _probe: llama_backend.BackendInfo("CPU", False, "CPU : AVX2 = 1"),
    )
    folder = tmp_path / "more-models"
    folder.mkdir()

    def new_window() -> MainWindow:
        win = MainWindow(log_dir=tmp_path / "logs", chats_db=tmp_path / "chats.db")
        qtbot.addWidget(win)
        win.show()
        return win

    async def scenario() -> None:
        win = new_window()
        dialog = win.extras.maybe_show_first_run()
        assert dialog is not None
        await arun.wait_until(lambda: bool(dialog.fits), 30, "the hardware probe")
        facts = dialog.hardware.texts()
        assert "llama.cpp: CPU only" in facts
        assert any(fact.startswith("RAM: ") for fact in facts)
        assert len(dialog.cards) == len(dialog.picks.categories)  # a best fit each
        _shot(dialog, tmp_path, "first_run")
        # Clicking a recommendation's card opens it in Discover (Hub unreachable here).
        monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
        dialog.model_chosen.emit("Qwen/Qwen2.5-7B-Instruct-GGUF", "model-Q4_K_M.gguf")
        assert win.pages.currentWidget() is win.discover_page
        dialog.close()

        page = win.show_page("Settings")
        assert page is win.extras.settings_page
        settings_page = win.extras.settings_page
        await settings_page.add_folder(folder)
        assert settings_page.folders_list.count() == 1
        settings_page.concurrency_spin.setValue(4)
        settings_page.bandwidth_spin.setValue(2048)
        settings_page.theme_combo.setCurrentIndex(2)  # dark
        assert str(tmp_path / "hearth-data") == settings_page.data_field.text()
        _shot(settings_page, tmp_path, "settings")
        win.resize(1010, 690)
        win.splitter.setSizes([200, 600, 210])
        sizes = win.splitter.sizes()
        closed: list[bool] = []
        win.closed.connect(lambda: closed.append(True))
        win.close()
        await arun.wait_until(lambda: closed, 30, "the window to close")

        saved = load_settings(SettingsStore().path)
        assert saved.download_concurrency == 4
        assert saved.bandwidth_limit_bps == 2048 * 1024
        assert saved.theme == "dark" and saved.first_run_done

        again = new_window()
        assert again.extras.maybe_show_first_run() is None  # only once
        s2 = again.extras.settings_page
        assert s2.concurrency_spin.value() == 4
        assert s2.bandwidth_spin.value() == 2048
        assert s2.theme_combo.currentIndex() == 2
        await arun.wait_until(lambda: s2.folders_list.count() == 1, 10, "the folders")
        # Restored, not the default 1200x760 (offscreen, Qt may clamp the width to the
        # virtual screen).
        assert saved.window_geometry and again.height() == 690
        assert saved.splitter_sizes["chat"] == sizes
        if again.width() < COMPACT_WIDTH:  # a narrow window folds the chat list: unfold
            again.chats_action.trigger()
        await arun.wait_until(lambda: again.splitter.sizes()[0] > 0, 5, "the chat list")
        assert again.splitter.sizes()[0] == sizes[0]  # the rest follows the clamped width
        s2.theme_combo.setCurrentIndex(0)  # back to the system palette
        # Help > Welcome and recommended models still opens it on demand.
        again.extras.welcome_action.trigger()
        assert again.extras.first_run is not None
        again.extras.first_run.close()

    arun(scenario())
