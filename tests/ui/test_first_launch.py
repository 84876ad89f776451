"""First launch never dead-ends: with no model, every page says what to do next.

The real main window with no worker: the Chat page shows cards instead of a blank
transcript, a disabled Send and a sampling panel full of "default"; the cards lead to
the Library (or the Load dialog) and to the recommended models; Library, Downloads
and Discover have their own empty states. Also the small gaps of issue 14 that need
no model: Esc from the chat search box, the request log without start-up probes,
and "1 model".
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from hearth.ui.pages.common import plural
from hearth.ui.pages.server.request_log_table import RequestLogTable
from hearth.ui.shell.main_window import MainWindow

pytestmark = pytest.mark.ui


@pytest.fixture
def window(offline_window: MainWindow) -> MainWindow:
    win = offline_window
    win.resize(1000, 700)
    win.show()
    return win


def test_chat_without_a_model_offers_the_next_step(qtbot: QtBot, arun, window: MainWindow) -> None:
    view = window.chat_view
    assert window.pages.currentIndex() == 0  # Chat
    assert view.showing_empty_state and view.empty_state.isVisible()
    assert not view.transcript.isVisible() and not view.send_button.isVisible()
    assert not window.settings_panel.isVisible()  # no "default"-filled sampling panel
    qtbot.waitUntil(window.sidebar.empty_label.isVisible, timeout=5000)  # says why empty
    titles = [card.title_label.text() for card in view.empty_state.cards]
    assert titles == ["Load a model you have", "Get a recommended model"]

    # "Load a model you have", with no model used before: the Library, which (empty)
    # has its own next steps.
    qtbot.mouseClick(view.empty_state.card("loadModelCard"), Qt.MouseButton.LeftButton)
    assert window.show_page("Library") is window.library_page
    assert window.pages.currentWidget() is window.library_page

    async def library_listed() -> None:
        await arun.wait_until(
            window.library_page.empty_state.isVisible, 20, "the library's empty state"
        )

    arun(library_listed())
    assert not window.library_page.table.isVisible()
    assert len(window.library_page.empty_state.cards) == 3

    # "Get a recommended model" (keyboard this time): it starts at once (the download
    # and load are tested in test_chat_quick_start.py against a fake Hub).
    window.show_page("Chat")
    card = view.empty_state.card("recommendedCard")
    card.setFocus()
    qtbot.keyClick(card, Qt.Key.Key_Return)
    assert window.quick_start.task is not None and window.quick_start.running
    window.quick_start.task.cancel()

    # Some text in the transcript (an old chat opened with no model): it is shown.
    view.add_user_turn("An old question", 0)
    assert not view.showing_empty_state and view.transcript.isVisible()
    view.clear_transcript()
    assert view.showing_empty_state
    view.set_can_send(True)  # a model became ready: the composer and the panel are back
    assert not view.showing_empty_state and view.send_button.isEnabled()
    assert window.settings_panel.isVisible()


def test_every_page_has_an_empty_state_with_a_next_step(window: MainWindow) -> None:
    window.show_page("Downloads")
    downloads = window.downloads_page
    assert downloads.empty_label.isVisible()
    downloads.empty_label.card("downloadsDiscoverCard").activated.emit()
    assert window.pages.currentWidget() is window.discover_page
    discover = window.discover_page
    assert discover.picks.isVisible() and not discover.list.isVisible()  # opens on picks
    discover.picks.recommended_button.click()
    assert window.extras.first_run is not None
    window.extras.first_run.close()
    # The rail shows every page with an icon and its name.
    names = [window.nav.item(i).text() for i in range(window.nav.count())]
    assert names == ["Chat", "Discover", "Downloads", "Library", "Server", "Settings"]
    assert all(not window.nav.item(i).icon().isNull() for i in range(window.nav.count()))
    toolbar_actions = (window.open_action, window.new_chat_action, window.extras.load_action)
    assert all(not a.icon().isNull() for a in toolbar_actions)


def test_esc_stops_a_reply_from_the_chat_search_box(
    qtbot: QtBot, qapp: QApplication, window: MainWindow
) -> None:
    view = window.chat_view
    stops: list[bool] = []
    view.stop_requested.connect(lambda: stops.append(True))
    view.set_can_send(True)
    view.set_generating(True)  # what ChatController does while a reply streams
    window.activateWindow()
    search = window.sidebar.search_box
    search.setFocus()
    qtbot.waitUntil(search.hasFocus, timeout=2000)
    qtbot.keyClick(search, Qt.Key.Key_Escape)
    assert stops == [True]
    view.set_generating(False)


def test_the_request_log_hides_start_up_health_probes(qtbot: QtBot) -> None:
    table = RequestLogTable()
    qtbot.addWidget(table)
    rows = [
        {"method": "GET", "path": "/health", "status": 503, "finished_at": 1.0},
        {"method": "GET", "path": "/health", "status": 200, "finished_at": 2.0},
        {"method": "GET", "path": "/v1/models", "status": 503, "finished_at": 3.0},
        {"method": "GET", "path": "/health", "status": 503, "finished_at": 4.0},
        {"method": "POST", "path": "/hearth/v1/access", "status": 200, "finished_at": 5.0},
        {"method": "POST", "path": "/hearth/v1/access", "status": 401, "finished_at": 6.0},
    ]
    table.show_rows(rows)
    assert table.column_texts("Request") == [
        "GET /health", "GET /v1/models", "POST /hearth/v1/access"
    ]  # fmt: skip
    assert table.column_texts("Status") == [
        "200 OK", "503 Service Unavailable", "401 Unauthorized"
    ]  # fmt: skip


def test_counts_are_pluralised() -> None:
    assert plural(1, "model") == "1 model"
    assert plural(0, "file") == "0 files"
    assert plural(2, "model") == "2 models"
    assert plural(12345, "download") == "12,345 downloads"


def test_at_800x600_the_side_panels_fold_and_the_composer_stays(
    qtbot: QtBot, window: MainWindow
) -> None:
    view = window.chat_view
    view.set_can_send(True)  # as when a model is ready: the transcript and composer show
    view.set_stats("12.0 tok/s · 40 tokens")
    window.resize(800, 600)
    qtbot.waitUntil(lambda: window.width() == 800 and window.height() == 600, timeout=2000)
    qtbot.waitUntil(lambda: not window.sidebar.isVisible(), timeout=2000)
    assert not window.settings_panel.isVisible()
    assert not window.chats_action.isChecked() and not window.settings_action.isChecked()
    bottom = window.statusBar().mapTo(window, window.statusBar().rect().topLeft()).y()
    for widget in (view.input, view.send_button, view.stats_label):
        assert widget.isVisible()
        top_left = widget.mapTo(window, widget.rect().topLeft())
        assert top_left.y() + widget.height() <= bottom, widget.objectName()
    assert view.transcript.height() >= 250
    window.chats_action.trigger()  # the toggle still opens the chat list
    assert window.sidebar.isVisible()
    window.resize(1300, 800)  # wide again: both panels come back
    qtbot.waitUntil(window.settings_panel.isVisible, timeout=2000)
    assert window.sidebar.isVisible()
