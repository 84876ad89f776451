"""How the Chat page reads to a new user: the chat list's rows (the open chat visible
in both themes, dates as people say them, search matches in bold rather than in
[brackets]), sampling boxes that name the value that applies, and the transcript's
spacing (no blank line above a list, blockquotes set in, the user's bubble padded, a
code block's shade kept while text streams after it)."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QColor, QGuiApplication, QTextCursor, QTextDocument
from PySide6.QtWidgets import QApplication, QMenu, QToolTip
from pytestqt.qtbot import QtBot

from hearth.chats import SamplingSettings
from hearth.core.sampling import SamplingParams
from hearth.ui.chat.list_rows import ROW_HEIGHT, snippet_runs, when
from hearth.ui.chat.md_render import MarkdownWriter, prepare_document
from hearth.ui.chat.message_card import CardMeta
from hearth.ui.chat.settings_panel import DEFAULT_TEXTS
from hearth.ui.chat.view import ChatView
from hearth.ui.shell.main_window import MainWindow
from hearth.ui.style.theme import apply_theme
from hearth.ui.style.tokens import BY_NAME
from hearth.ui.widgets.copy_feedback import COPIED

pytestmark = pytest.mark.ui


def test_when_says_it_as_people_do() -> None:
    now = time.mktime((2026, 12, 3, 15, 0, 0, 0, 0, -1))  # a Thursday afternoon
    assert when(now - 3600, now) == time.strftime("Today %H:%M", time.localtime(now - 3600))
    assert when(now - 86400, now) == "Yesterday"
    assert when(now - 3 * 86400, now) == "Monday"
    assert when(time.mktime((2026, 10, 5, 9, 0, 0, 0, 0, -1)), now) == "Oct 5"
    assert when(time.mktime((2024, 10, 5, 9, 0, 0, 0, 0, -1)), now) == "2024-10-05"


def test_search_snippets_lose_their_brackets() -> None:
    runs = snippet_runs("read a file [line] by [line]…")
    assert runs == [
        ("read a file ", False),
        ("line", True),
        (" by ", False),
        ("line", True),
        ("…", False),
    ]
    assert "".join(text for text, _ in runs) == "read a file line by line…"


@pytest.fixture
def window(
    qtbot: QtBot, qloop: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> MainWindow:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    win = MainWindow(log_dir=tmp_path / "logs", chats_db=tmp_path / "chats.db")
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    return win


def test_the_open_chat_is_a_visible_row_in_both_themes(
    qtbot: QtBot, qapp: QApplication, arun, window: MainWindow
) -> None:
    """The open chat used to be painted white on white in the light theme (the
    selection colours of an inactive window): it is now a raised row, its title in the
    body colour."""
    sidebar = window.sidebar
    ids = window.chats_db.sync(
        lambda s: [s.create_conversation(t).id for t in ("Older chat", "Newest chat")]
    )
    arun(window.chat.open_conversation(ids[0]))
    arun(sidebar.refresh())
    assert sidebar.shown_ids() == [ids[1], ids[0]]
    assert sidebar.rename_button.isVisible()  # a chat is open: its actions show
    row = sidebar.list.visualItemRect(sidebar.list.item(1))
    assert row.height() == ROW_HEIGHT
    # A right-click offers the row's own actions (the other row, not the open chat).
    direct = Qt.FindChildOption.FindDirectChildrenOnly
    before = set(sidebar.findChildren(QMenu, options=direct))
    sidebar._row_menu(sidebar.list.visualItemRect(sidebar.list.item(0)).center())
    (menu,) = set(sidebar.findChildren(QMenu, options=direct)) - before
    assert [a.text() for a in menu.actions() if a.text()] == ["Rename…", "Export", "Delete…"]
    menu.close()
    for theme in ("light", "dark"):
        apply_theme(theme)
        t = BY_NAME[theme]
        qtbot.waitUntil(lambda t=t: window.tokens is t)
        image = sidebar.list.viewport().grab().toImage()
        inside = image.pixelColor(row.center().x(), row.top() + 4)
        assert inside == QColor(t.surface), theme  # the raised row
        colours = {
            image.pixelColor(x, y).name()
            for x in range(row.left(), row.right(), 2)
            for y in range(row.top(), row.center().y())
        }
        assert t.text in colours and t.accent_fill in colours, theme  # title, accent bar


def test_sampling_boxes_name_the_value_that_applies(window: MainWindow) -> None:
    panel = window.settings_panel
    worker = SamplingParams()
    temperature = panel.fields["temperature"]
    assert temperature.text() == f"Default ({worker.temperature:g})"
    assert panel.fields["top_k"].text() == f"Default ({worker.top_k})"
    assert panel.fields["max_tokens"].text() == DEFAULT_TEXTS["max_tokens"] == "No limit"
    assert panel.fields["seed"].text() == "Random"
    assert all(box.text() != "default" for box in panel.fields.values())
    temperature.setValue(0.3)
    panel.fields["seed"].setValue(7)
    assert panel.sampling() == SamplingSettings(temperature=0.3, seed=7)
    panel.reset_button.click()
    assert panel.sampling() == SamplingSettings()
    assert temperature.text() == f"Default ({worker.temperature:g})"


def _doc() -> QTextDocument:
    doc = QTextDocument()
    prepare_document(doc)
    return doc


TEXT = """Intro paragraph.

> A quoted tip.

- one
- two

```py
x = 1
```
Text right after the code.
"""


def _formats(doc: QTextDocument) -> list[tuple[str, str | None, float]]:
    out = []
    block = doc.begin()
    while block.isValid():
        fmt = block.blockFormat()
        bg = (
            fmt.background().color().name()
            if fmt.hasProperty(fmt.Property.BackgroundBrush)
            else None
        )
        out.append((block.text().strip(), bg, fmt.leftMargin()))
        block = block.next()
    return out


def _position(doc: QTextDocument, n: int) -> int:
    """Where the ``n``th block starts."""
    block = doc.begin()
    for _ in range(n):
        block = block.next()
    return block.position()


def test_lists_quotes_and_code_blocks_are_spaced_and_shaded(qapp: QApplication) -> None:
    t = BY_NAME["light"]
    whole = _doc()
    MarkdownWriter(whole, [], tokens=t).set_text(TEXT)
    blocks = _formats(whole)
    texts = [text for text, _, _ in blocks]
    one = texts.index("one")
    assert texts[one - 1].startswith("A quoted tip")  # no empty block above the list
    quote = blocks[one - 1]
    assert quote[2] > 0  # the quote: set in
    code = texts.index("x = 1")
    frame = QTextCursor(whole.findBlock(_position(whole, code))).currentFrame()
    assert frame is not whole.rootFrame()  # a code block is a shaded, padded frame
    assert frame.frameFormat().background().color().name() == t.code_bg
    assert frame.frameFormat().padding() > 0
    assert texts[code - 1].startswith("py") and texts[code + 1].startswith("Text right")
    after = QTextCursor(whole.findBlock(_position(whole, code + 1))).currentFrame()
    assert after is whole.rootFrame()  # the text goes on after the frame, no blank line

    # Streamed in any pieces, every block keeps its format: the tail drawn after the
    # code block used to hand its own (unshaded) format to the block above it.
    for seed in range(5):
        rng = random.Random(seed)
        doc = _doc()
        writer = MarkdownWriter(doc, [], tokens=t)
        i = 0
        while i < len(TEXT):
            n = rng.choice([1, 2, 3, 5])
            writer.append(TEXT[i : i + n])
            writer.render()
            i += n
        writer.finish()
        assert _formats(doc) == blocks, seed


def test_the_users_message_sits_on_a_padded_bubble(qtbot: QtBot) -> None:
    view = ChatView()
    qtbot.addWidget(view)
    view.set_can_send(True)
    view.add_user_turn("A question", 0)
    view.add_assistant_message("An answer", index=1, meta=CardMeta("tiny-model"))
    doc = view.transcript.document()
    texts = [text for text, _, _ in _formats(doc)]
    asked = texts.index("A question")
    assert texts[asked - 1].endswith("You")  # the name, above the bubble
    bubble = QTextCursor(doc.findBlock(_position(doc, asked))).currentFrame()
    name = QTextCursor(doc.findBlock(_position(doc, asked - 1))).currentFrame()
    answer = QTextCursor(doc.findBlock(_position(doc, texts.index("An answer")))).currentFrame()
    assert bubble is not doc.rootFrame() and name is answer is doc.rootFrame()
    fmt = bubble.frameFormat()
    assert fmt.background().color().name() == view.tokens.surface_alt and fmt.padding() >= 8
    # Each author's name follows an icon (an image in the document).
    html = doc.toHtml()
    assert html.count("<img") == 2


def test_an_empty_chat_greets_instead_of_a_blank_page(qtbot: QtBot) -> None:
    view = ChatView()
    qtbot.addWidget(view)
    view.resize(900, 600)
    view.set_can_send(True)  # a model is loaded: no first-launch cards, the transcript
    view.show()
    qtbot.waitExposed(view)
    text = QColor(view.tokens.text)

    def band_has_text() -> bool:
        viewport = view.transcript.viewport()
        image = viewport.grab().toImage()
        middle = viewport.height() // 2
        return any(
            image.pixelColor(x, y) == text
            for x in range(0, viewport.width(), 2)
            for y in range(middle - 50, middle)
        )

    assert not view.showing_empty_state and band_has_text()  # "Ask anything"
    view.add_user_turn("Hello", 0)
    assert not band_has_text()  # the greeting goes with the first message


def test_copy_says_copied_where_it_was_clicked(qtbot: QtBot) -> None:
    view = ChatView()
    qtbot.addWidget(view)
    view.resize(800, 500)
    view.set_can_send(True)
    view.show()
    qtbot.waitExposed(view)
    view.add_assistant_message("```py\nx = 1\n```", index=0, meta=CardMeta("tiny"))
    view.transcript.anchorClicked.emit(QUrl("copy:0"))  # the code block's Copy link
    assert QGuiApplication.clipboard().text() == "x = 1"
    qtbot.waitUntil(lambda: QToolTip.isVisible() and QToolTip.text() == COPIED)
    QToolTip.hideText()
    QGuiApplication.clipboard().clear()
