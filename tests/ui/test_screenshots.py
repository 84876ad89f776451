"""The docs' screenshots, from the real app: every page, both themes, two sizes.

A model loaded in a real worker, a conversation with every kind of markdown (code
included), Discover as a first launch sees it and one repo's page (a fake Hub on
127.0.0.1 with the tiny test models), a finished download, the library, the endpoint
page (on, with a client's requests in its log), Settings, the Welcome window and the
Load dialog; at 1400x900 and at 900x650, where the chat's side panels fold. The tools
and documents shots are in ``test_screenshots_tools.py``.

PNGs go to the test's temporary folder; with HEARTH_SAVE_DOCS_SCREENSHOT=1 they are
copied to docs/screenshots/ as ``<page>-<theme>.png`` (1400x900; the README shows
chat, discover and server) and ``<page>-narrow-<theme>.png`` (900x650). The test also
checks what the pictures rely on: the theme reached the transcript (its code blocks
are redrawn in the theme's colours) and each page shows real content.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from PySide6.QtCore import QSize
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from fake_hub import FakeFile, FakeHub
from hearth.chats import ChatStore
from hearth.chats.images import check_image
from hearth.hub import DownloadState
from hearth.supervisor import LoadOptions, WorkerState
from hearth.supervisor.residency_loads import load_beside
from hearth.ui.pages.services import AppServices
from hearth.ui.shell.main_window import MainWindow
from hearth.ui.style.theme import apply_theme
from hearth.ui.style.tokens import BY_NAME
from hearth.ui.welcome import first_run, llama_backend
from hub_testing import FAST_RETRY, isolated_hf  # noqa: F401 - autouse: a file keyring
from image_files import picture_png
from screenshot_saving import NARROW, SIZE, THEMES, fit_dialog, save_shot
from server_process import free_port

pytestmark = pytest.mark.ui

REPO = "hearth/tiny-GGUF"
Q8, Q4 = "tiny-Q8_0.gguf", "tiny-Q4_K_M.gguf"
MODEL_CARD = """---
license: apache-2.0
---
# Tiny (GGUF)

A **1.4M-parameter** llama-architecture model with random weights, made for Hearth's
tests: it answers in noise, so use it to try the app.

| File | Quant | Use |
| --- | --- | --- |
| tiny-Q8_0.gguf | Q8_0 | closest to the original |
| tiny-Q4_K_M.gguf | Q4_K_M | smaller and faster |

```
<|user|>
{prompt}<|end|>
<|assistant|>
```
"""
QUESTION = "How do I read a file line by line in Python, and what about big files?"
ANSWER = """## Reading a file line by line

Iterate over the file object: it reads **one line at a time**, so memory stays flat
even for a multi-gigabyte log. Use `with` so the file is closed for you:

```python
from pathlib import Path

def count_errors(path: Path) -> int:
    errors = 0
    with path.open(encoding="utf-8") as lines:
        for line in lines:  # one line in memory at a time
            if "ERROR" in line:
                errors += 1
    return errors
```

| Approach | Memory | When |
| --- | --- | --- |
| `for line in f` | one line | almost always |
| `f.read()` | whole file | small files |

> Tip: pass `errors="replace"` when a log may hold invalid UTF-8.

See the [io docs](https://docs.python.org/3/library/io.html) for buffering options.
"""




@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tiny_model_q8: Path, tiny_model_q4km: Path):
    with FakeHub() as fake:
        card = FakeFile(MODEL_CARD.encode(), lfs=False)
        files = {Q8: tiny_model_q8.read_bytes(), Q4: tiny_model_q4km.read_bytes()}
        fake.add_repo(REPO, {**files, "README.md": card})
        yield fake


def test_screenshots_in_both_themes(
    qtbot: QtBot,
    qapp: QApplication,
    arun,
    tmp_path: Path,
    tiny_model_q8: Path,
    hub: FakeHub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        llama_backend, "probe_backend", lambda _p: llama_backend.BackendInfo("CPU", False, "CPU")
    )
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # Discover as offline
    chats_db = tmp_path / "chats.db"
    options = {
        "retry": FAST_RETRY,
        "reserve_bytes": 0,
        "token_provider": lambda: None,
        "endpoint": hub.url,  # the manager reads it once, before Discover is shown
    }

    window = MainWindow(
        log_dir=tmp_path / "logs",
        chats_db=chats_db,
        load_options=LoadOptions(n_ctx=2048, n_parallel=2),
        services=AppServices(download_options=options),
    )
    qtbot.addWidget(window)
    window.resize(*SIZE)
    window.show()

    def write_history(store: ChatStore) -> int:
        conv = store.create_conversation("Reading big files in Python")
        asked = store.add_message(conv.id, "user", QUESTION)
        store.images.add(asked.id, [check_image(picture_png(), "sketch.png")])  # issue 23
        store.add_message(conv.id, "assistant", ANSWER)
        store.create_conversation("Draft a polite reminder email")
        return conv.id

    async def shot(name: str) -> None:
        await asyncio.sleep(0.05)  # a page just shown lays itself out on the next turn
        save_shot(window, tmp_path, name)

    async def themed(theme: str) -> None:
        apply_theme(theme)
        await asyncio.sleep(0.05)  # palette events (no processEvents inside the loop)

    async def narrow() -> None:
        """A small screen: the side panels fold, the chat keeps its composer and footer."""
        window.resize(*NARROW)  # clamped by the panels' minimum widths, until they fold
        await arun.wait_until(lambda: not window.sidebar.isVisible(), 5, "the fold")
        await arun.wait_until(
            lambda: window.minimumSize().width() <= NARROW[0], 5, "the folded minimum width"
        )
        window.resize(*NARROW)
        await arun.wait_until(lambda: window.size().toTuple() == NARROW, 5, "the size")

    async def dialogs(suffix: str, size: tuple[int, int]) -> None:
        """The Welcome window and the Load dialog, in both themes, as on a screen of
        ``size`` (the offscreen platform's own screen is 800 px wide, where the
        Welcome window rightly puts its cards in one column)."""
        room = QSize(size[0] - 16, size[1] - 48)  # less a window manager's frame
        monkeypatch.setattr(first_run.FirstRunDialog, "room", lambda _self: room)
        welcome = window.extras.show_first_run()
        await arun.wait_until(lambda: bool(welcome.fits), 30, "the welcome's fits")
        load = window.extras.show_load_dialog(tiny_model_q8)
        await arun.wait_until(lambda: load.meta is not None, 30, "the model's header")
        await arun.wait_until(lambda: load.vision.looked, 30, "the projector beside it")
        for theme in THEMES:
            await themed(theme)
            for name, dialog in (("welcome", welcome), ("load", load)):
                fit_dialog(dialog, size)
                await asyncio.sleep(0.05)
                save_shot(dialog, tmp_path, f"{name}{suffix}-{theme}")
        welcome.close()
        load.reject()

    async def serve_a_few_requests() -> None:
        """The endpoint on (key-less on loopback) and a client's requests in its log."""
        panel = window.extras.server_panel
        port = free_port()
        panel.port_spin.setValue(port)
        panel.enabled_check.setChecked(True)
        await arun.wait_until(lambda: window.supervisor.endpoint_port == port, 60, "endpoint")
        base = f"http://127.0.0.1:{port}"
        chat = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 12}
        async with httpx.AsyncClient(trust_env=False, timeout=60) as http:
            assert (await http.get(f"{base}/v1/models")).status_code == 200
            assert (await http.post(f"{base}/v1/chat/completions", json=chat)).is_success
            assert (await http.get(f"{base}/api/tags")).status_code == 200

    def logged_requests() -> bool:
        return len(window.extras.server_panel.requests) >= 3

    model_page = window.discover_page.model_page

    async def pages(suffix: str) -> None:
        for theme in THEMES:
            tokens = BY_NAME[theme]
            await themed(theme)
            view = window.chat_view
            assert view.tokens is tokens
            html = view.transcript.document().toHtml().lower()
            assert tokens.code_bg in html and tokens.table_header_bg in html  # redrawn
            window.show_page("Chat")
            assert view.input.isVisible() and view.stats_label.isVisible()
            await shot(f"chat{suffix}-{theme}")
            window.show_page("Discover")
            assert window.discover_page.picks.isVisible()
            await shot(f"discover{suffix}-{theme}")
            await window.discover_page.open_model(REPO)
            await arun.wait_until(lambda: all(model_page.fit_texts()), 20, "the fit chips")
            await shot(f"discover-model{suffix}-{theme}")
            model_page.back_button.click()
            window.show_page("Downloads")
            await shot(f"downloads{suffix}-{theme}")
            window.show_page("Library")
            assert window.library_page.table.rowCount() == 2  # imported, downloaded
            await shot(f"library{suffix}-{theme}")
            for page in ("Server", "Settings"):
                window.show_page(page)
                if page == "Server":  # the log is polled while the page shows
                    await arun.wait_until(logged_requests, 15, "the request log")
                await shot(f"{page.lower()}{suffix}-{theme}")
        window.show_page("Chat")

    async def scenario() -> None:
        # First launch: no model, no chats yet.
        await arun.wait_until(window.sidebar.empty_label.isVisible, 10, "the empty chat list")
        for theme in THEMES:
            await themed(theme)
            assert window.chat_view.showing_empty_state
            await shot(f"first-launch-{theme}")
        await narrow()
        for theme in THEMES:
            await themed(theme)
            await shot(f"first-launch-narrow-{theme}")
        window.resize(*SIZE)
        await arun.wait_until(window.sidebar.isVisible, 5, "the chat list back")
        window.show_page("Discover")  # offline: the picks file, judged for this machine
        discover = window.discover_page
        assert discover.picks_task is not None and discover.trending_task is not None
        await asyncio.wait([discover.picks_task, discover.trending_task])
        window.show_page("Chat")
        monkeypatch.setenv("HF_ENDPOINT", hub.url)  # a repo's page and a download
        conv_id = await window.chats_db.run(write_history)
        await window.sidebar.refresh()

        await window.library_page.import_file(tiny_model_q8)
        await arun.wait_until(lambda: window.library_page.models, 20, "the library")
        download = window.services.downloads.add(REPO, Q4)
        await download.wait()
        window.downloads_page.flush()
        row = window.downloads_page.row_for(Q4)
        assert row is not None and row.last.state is DownloadState.COMPLETED
        window.open_model(tiny_model_q8)
        await arun.wait_until(
            lambda: window.supervisor.status.state in (WorkerState.READY, WorkerState.ERROR),
            120,
            "the model",
        )
        assert window.supervisor.status.state is WorkerState.READY
        # A second model loaded beside the first: two chips in the top bar.
        second = next(m.path for m in window.library_page.models if m.path.name == Q4)
        assert window.supervisor.client is not None
        await load_beside(
            window.supervisor.client, second, LoadOptions(n_ctx=2048, n_parallel=2), replace=False
        )
        await arun.wait_until(lambda: len(window.model_bar.chips.chips) == 2, 30, "two chips")
        await serve_a_few_requests()
        await window.chat.open_conversation(conv_id)
        # An image waiting in the composer (the tiny model can't see: added past the check).
        composer_images = window.chat_view.composer.images
        composer_images.add_image(QImage.fromData(picture_png(160, 100)))
        await arun.wait_until(lambda: not composer_images.reading, 30, "the image read")
        window.chat_view.set_stats("41.8 tok/s · TTFT 182 ms · 212 tokens · context 301 / 2048")
        await arun.wait_until(lambda: window.sidebar.list.count() == 2, 10, "the chat list")
        await arun.wait_until(lambda: len(window.library_page.models) == 2, 20, "2 models")

        await pages("")
        await dialogs("", SIZE)

        await narrow()
        await pages("-narrow")
        await dialogs("-narrow", NARROW)

        closed: list[bool] = []
        window.closed.connect(lambda: closed.append(True))
        window.close()
        await arun.wait_until(lambda: closed, 30, "the window to close")

    arun(scenario(), timeout=300)
