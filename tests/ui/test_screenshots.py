"""The docs' screenshots, in both themes, from the real app: a model loaded in a
real worker, a conversation with every kind of markdown, the endpoint page, the
library holding the model, and Discover as a first launch sees it.

PNGs (1400x900, and the chat at 900x650) go to the test's temporary folder; with
HEARTH_SAVE_DOCS_SCREENSHOT=1 they are copied to docs/screenshots/ as
``<page>-<theme>.png`` (what the README shows). The
test also checks what the pictures rely on: the theme reached the transcript (its
code blocks are redrawn in the theme's colours) and each page shows real content.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication, QWidget
from pytestqt.qtbot import QtBot

from hearth.chats import ChatStore
from hearth.supervisor import LoadOptions, WorkerState
from hearth.ui import first_run
from hearth.ui.main_window import MainWindow
from hearth.ui.style.theme import apply_theme
from hearth.ui.style.tokens import BY_NAME

pytestmark = pytest.mark.ui

DOCS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
SIZE = (1400, 900)
NARROW = (900, 650)

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


def _save(widget: QWidget, tmp_path: Path, name: str) -> Path:
    out = tmp_path / f"{name}.png"
    assert widget.grab().save(str(out))
    if os.environ.get("HEARTH_SAVE_DOCS_SCREENSHOT"):
        DOCS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out, DOCS / out.name)
    return out


def test_screenshots_in_both_themes(
    qtbot: QtBot,
    qapp: QApplication,
    arun,
    tmp_path: Path,
    tiny_model_q8: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        first_run, "probe_backend", lambda _p: first_run.BackendInfo("CPU", False, "CPU")
    )
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # Discover as offline
    chats_db = tmp_path / "chats.db"

    window = MainWindow(
        log_dir=tmp_path / "logs",
        chats_db=chats_db,
        load_options=LoadOptions(n_ctx=2048, n_parallel=2),
    )
    qtbot.addWidget(window)
    window.resize(*SIZE)
    window.show()

    def write_history(store: ChatStore) -> int:
        conv = store.create_conversation("Reading big files in Python")
        store.add_message(conv.id, "user", QUESTION)
        store.add_message(conv.id, "assistant", ANSWER)
        store.create_conversation("Draft a polite reminder email")
        return conv.id

    async def scenario() -> None:
        # First launch: no model, no chats yet.
        await arun.wait_until(window.sidebar.empty_label.isVisible, 10, "the empty chat list")
        for theme in ("light", "dark"):
            apply_theme(theme)
            await asyncio.sleep(0.05)  # palette events (no processEvents inside the loop)
            assert window.chat_view.showing_empty_state
            _save(window, tmp_path, f"first-launch-{theme}")
        conv_id = await window.chats_db.run(write_history)
        await window.sidebar.refresh()

        await window.library_page.import_file(tiny_model_q8)
        await arun.wait_until(lambda: window.library_page.models, 20, "the library")
        window.open_model(tiny_model_q8)
        await arun.wait_until(
            lambda: window.supervisor.status.state in (WorkerState.READY, WorkerState.ERROR),
            120,
            "the model",
        )
        assert window.supervisor.status.state is WorkerState.READY
        await window.chat.open_conversation(conv_id)
        window.chat_view.set_stats("41.8 tok/s · TTFT 182 ms · 212 tokens · context 301 / 2048")
        await arun.wait_until(lambda: window.sidebar.list.count() == 2, 10, "the chat list")

        for theme in ("light", "dark"):
            tokens = BY_NAME[theme]
            apply_theme(theme)
            await asyncio.sleep(0.05)  # palette events (no processEvents inside the loop)
            view = window.chat_view
            assert view.tokens is tokens
            html = view.transcript.document().toHtml().lower()
            assert tokens.code_bg in html and tokens.table_header_bg in html  # redrawn
            window.show_page("Chat")
            _save(window, tmp_path, f"chat-{theme}")
            window.show_page("Discover")
            assert window.discover_page.picks.isVisible()
            await window.discover_page.picks_task  # the fit chips judged for this machine
            _save(window, tmp_path, f"discover-{theme}")
            window.show_page("Library")
            assert window.library_page.table.rowCount() == 1
            _save(window, tmp_path, f"library-{theme}")
            window.show_page("Server")
            _save(window, tmp_path, f"server-{theme}")

        # A small screen: the side panels fold, the chat keeps its composer and footer.
        window.show_page("Chat")
        window.resize(*NARROW)  # clamped by the panels' minimum widths, until they fold
        await arun.wait_until(lambda: not window.sidebar.isVisible(), 5, "the fold")
        await arun.wait_until(
            lambda: window.minimumSize().width() <= NARROW[0], 5, "the folded minimum width"
        )
        window.resize(*NARROW)
        await arun.wait_until(lambda: window.size().toTuple() == NARROW, 5, "the size")
        for theme in ("light", "dark"):
            apply_theme(theme)
            await asyncio.sleep(0.05)
            window.show_page("Chat")
            assert window.chat_view.input.isVisible() and window.chat_view.stats_label.isVisible()
            _save(window, tmp_path, f"chat-narrow-{theme}")

        closed: list[bool] = []
        window.closed.connect(lambda: closed.append(True))
        window.close()
        await arun.wait_until(lambda: closed, 30, "the window to close")

    arun(scenario())
