"""The Server page as a new user sees it: four titled cards, the endpoint's state at a
glance (switch, coloured chip, address, Copy), a request log that fits its width with
statuses readable in both themes, empty states that say what to do, and nothing
clipped at 1400x900 or 900x650.

The panel sits in a scroll area the size of the window's page area, as ``PageRail``
hosts it (``scroll=True``: the window less its rail, top bar, menu and status bar).
Rows are the worker's ``GET /hearth/v1/requests`` entries, written out here; the real
worker's rows are checked in ``test_load_server_settings``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtGui import QGuiApplication, QPalette
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QApplication,
    QGroupBox,
    QLabel,
    QScrollArea,
    QWidget,
)
from pytestqt.qtbot import QtBot

from hearth.core.client_config import SNIPPETS
from hearth.supervisor import Supervisor
from hearth.ui.app_settings import SettingsStore
from hearth.ui.pages.server.api_keys_box import NO_KEYS
from hearth.ui.pages.server.endpoint_box import EndpointState, endpoint_state
from hearth.ui.pages.server.panel import ServerPanel
from hearth.ui.pages.server.request_log_table import (
    COL_STATUS,
    EMPTY_OFF,
    EMPTY_ON,
    LOG_COLUMNS,
    status_hint,
    status_text,
    tone,
)
from hearth.ui.style.theme import apply_theme, tokens_for
from hearth.ui.style.tokens import contrast_ratio
from hearth.ui.widgets.section import Section
from page_frame import (
    AA,
    CHROME,
    NARROW,
    RAIL,
    WIDE,
    assert_controls_whole,
    host,
    painted_background,
    visible_controls,
)

pytestmark = pytest.mark.ui

TITLES = ["Endpoint", "API keys", "Ready-to-paste configuration", "Requests"]
MODEL = "qwen2.5-coder-7b-instruct-Q4_K_M"


def _row(i: int, method: str, path: str, status: int, **fields: Any) -> dict[str, Any]:
    now = time.time()
    row: dict[str, Any] = {
        "id": i, "request_id": f"r{i}", "started_at": now - i, "finished_at": now - i,
        "method": method, "path": path, "status": status, "duration_ms": 3.2,
        "client": "127.0.0.1", "model": None, "engine": None, "finish_reason": None,
        "prompt_tokens": None, "cached_tokens": None, "completion_tokens": None,
        "ttft_ms": None, "decode_tokens_per_s": None,
    }  # fmt: skip
    row.update(fields)
    return row


GENERATED = {
    "model": MODEL, "finish_reason": "stop", "prompt_tokens": 1843, "cached_tokens": 1536,
    "completion_tokens": 212, "ttft_ms": 182.4, "decode_tokens_per_s": 41.83,
    "duration_ms": 5262.0,
}  # fmt: skip
ROWS = [
    _row(1, "POST", "/v1/chat/completions", 200, **GENERATED),
    _row(2, "GET", "/v1/models", 200),
    _row(3, "GET", "/v1/models", 401),
    _row(4, "POST", "/v1/chat/completions", 404, model="gpt-4o"),
    _row(5, "POST", "/api/chat", 499, model=MODEL, finish_reason="cancelled"),
    _row(6, "GET", "/health", 503),  # the app's own start-up probe: hidden
]


def _hosted(
    qtbot: QtBot, arun, tmp_path: Path, window: tuple[int, int], theme: str
) -> tuple[QScrollArea, ServerPanel]:
    apply_theme(theme)
    panel = ServerPanel(Supervisor(), SettingsStore(tmp_path / "settings.json"))
    area = host(qtbot, panel, window)
    arun(panel.refresh_keys())
    QApplication.processEvents()
    return area, panel


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("window", [WIDE, NARROW], ids=["1400x900", "900x650"])
def test_cards_fit_and_nothing_is_clipped(
    qtbot: QtBot, arun, tmp_path: Path, file_keyring, window: tuple[int, int], theme: str
) -> None:
    area, panel = _hosted(qtbot, arun, tmp_path, window, theme)
    panel.log_table.show_rows(ROWS)
    QApplication.processEvents()
    assert panel.findChildren(QGroupBox) == []
    sections = [s for s in panel.findChildren(Section) if s.isVisibleTo(panel)]
    assert sorted(s.title() for s in sections) == sorted(TITLES)
    for section in sections:
        assert section.description() and section.description_label.isVisibleTo(section)
    bold = [w.text() for w in panel.findChildren(QLabel) if "<b>" in w.text()]
    assert bold == [], "every block is a card with a title, no loose bold labels"

    # Every control at least its own size, inside its card, within the visible width.
    viewport = area.viewport()
    controls = visible_controls(panel)
    assert len(controls) >= 12
    assert_controls_whole(controls, sections, viewport)
    assert area.horizontalScrollBar().maximum() == 0

    def at(widget: QWidget) -> QPoint:
        return widget.mapTo(panel, QPoint(0, 0))

    endpoint, keys, snippets, requests = (
        panel.endpoint_box, panel.keys_box, panel.snippets_box, panel.requests_box
    )  # fmt: skip
    if window == WIDE:  # two columns, everything on one screen (no page scrolling)
        assert area.verticalScrollBar().maximum() == 0
        assert at(endpoint).x() == at(keys).x() < at(snippets).x() == at(requests).x()
        assert at(endpoint).y() == at(snippets).y() < at(keys).y()
    else:  # stacked cards, endpoint and keys side by side on top; the page scrolls
        assert at(endpoint).y() == at(keys).y() < at(snippets).y() < at(requests).y()
        assert at(endpoint).x() < at(keys).x()

    # The log fits its width: no sideways scrolling, the key columns always shown.
    table = panel.log_table
    shown = [c for c in range(len(LOG_COLUMNS)) if not table.isColumnHidden(c)]
    assert sum(table.columnWidth(c) for c in shown) <= table.viewport().width()
    for name in ("Time", "Request", "Status", "Model", "Prompt", "Completion"):
        assert not table.isColumnHidden(LOG_COLUMNS.index(name)), name
    if window == WIDE:
        assert not table.isColumnHidden(LOG_COLUMNS.index("tok/s"))
    for col in shown:  # every shown cell's text is whole, but for the elided model name
        if LOG_COLUMNS[col] == "Model":
            continue
        for r in range(table.rowCount()):
            item = table.item(r, col)
            assert item is not None
            text_w = table.fontMetrics().horizontalAdvance(item.text())
            assert text_w <= table.columnWidth(col), (LOG_COLUMNS[col], item.text())
    assert table.rowCount() == 5  # the /health probe is the app's own
    assert not table.showing_empty_state
    assert panel.grab().save(str(tmp_path / f"server-{window[0]}-{theme}.png"))


def test_empty_states_say_what_to_do(qtbot: QtBot, arun, tmp_path: Path, file_keyring) -> None:
    _area, panel = _hosted(qtbot, arun, tmp_path, NARROW, "light")
    table = panel.log_table
    panel.log_table.show_rows([])
    assert table.showing_empty_state and table.empty_label.text() == EMPTY_OFF
    assert "paste a config" in EMPTY_OFF and "turn the endpoint on" in EMPTY_OFF
    table.set_endpoint_on(True)
    assert table.empty_label.text() == EMPTY_ON and "No requests yet" in EMPTY_ON
    label_rect = QRect(table.empty_label.mapTo(table, QPoint(0, 0)), table.empty_label.size())
    assert table.rect().contains(label_rect) and label_rect.height() > 40
    table.show_rows(ROWS[-1:])  # only the app's own probe: still nothing to show
    assert table.showing_empty_state
    table.show_rows(ROWS)
    assert not table.showing_empty_state

    keys = panel.keys_box
    assert keys.no_keys.isVisibleTo(keys) and keys.no_keys.text() == NO_KEYS
    assert not keys.copy_key_button.isEnabled() and not keys.revoke_button.isEnabled()
    assert arun(keys.add_key("laptop"))
    assert not keys.no_keys.isVisibleTo(keys)
    assert keys.copy_key_button.isEnabled() and keys.revoke_button.isEnabled()
    panel.shutdown()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_statuses_and_the_state_chip_meet_aa(
    qtbot: QtBot, arun, tmp_path: Path, file_keyring, theme: str
) -> None:
    _area, panel = _hosted(qtbot, arun, tmp_path, WIDE, theme)
    table = panel.log_table
    table.show_rows(ROWS)
    QApplication.processEvents()
    t = tokens_for(table.palette())
    expected = [t.good, t.good, t.danger, t.danger, t.warn]  # 200, 200, 401, 404, 499
    image = table.viewport().grab().toImage()
    failures = []
    for r, want in enumerate(expected):
        item = table.item(r, COL_STATUS)
        assert item is not None
        color = item.foreground().color().name()
        assert color == want, (r, item.text())
        assert item.toolTip() == status_hint(ROWS[r])
        rect = table.visualItemRect(item)
        ratio = contrast_ratio(color, painted_background(image, rect))
        if ratio < AA:
            failures.append(f"{item.text()}: {ratio:.2f}")
    assert not failures, failures

    # The snippets' "not yet" line beside Copy (the endpoint is off here).
    notice = panel.snippet_tabs.notices["claude-code"]
    assert "turn it on" in notice.text() and notice.isVisible()
    card = panel.snippets_box.grab().toImage()
    rect = QRect(notice.mapTo(panel.snippets_box, QPoint(0, 0)), notice.size())
    color = notice.palette().color(QPalette.ColorRole.WindowText).name()
    assert color == t.warn
    assert contrast_ratio(color, painted_background(card, rect)) >= AA

    # The chip, in each of its tones, on the card it is painted on.
    box = panel.endpoint_box
    chip = box.state_chip
    for enabled, error, running, port in (
        (False, None, True, None),  # off
        (True, None, False, None),  # waiting for a model
        (True, None, True, 8677),  # running
        (True, "the port is taken", True, None),  # error
    ):
        state = endpoint_state(
            enabled=enabled, error=error, worker_running=running, listening_port=port,
            port=8677, url="http://127.0.0.1:8677", lan=False, require_key=False,
        )  # fmt: skip
        box.show_state(state, "http://127.0.0.1:8677")
        QApplication.processEvents()
        assert box.state_tone() == state.tone
        picture = chip.grab().toImage()
        inner = chip.rect().adjusted(3, 3, -3, -3)
        background = painted_background(picture, inner)
        color = chip.palette().color(QPalette.ColorRole.WindowText).name()
        assert contrast_ratio(color, background) >= AA, (state.tone, color, background)
    panel.shutdown()


def _state(
    *,
    enabled: bool = True,
    error: str | None = None,
    listening_port: int | None = 8677,
    require_key: bool = False,
) -> EndpointState:
    return endpoint_state(
        enabled=enabled, error=error, worker_running=True, listening_port=listening_port,
        port=8677, url="http://127.0.0.1:8677", lan=False, require_key=require_key,
    )  # fmt: skip


def test_state_words_and_the_copy_button(qtbot: QtBot, arun, tmp_path: Path, file_keyring) -> None:
    off = _state(enabled=False, listening_port=None)
    assert (off.tone, off.chip) == ("off", "Off") and off.text.startswith("Off: ")
    on = _state()
    assert (on.tone, on.chip) == ("on", "Running")
    assert "serving at http://127.0.0.1:8677/v1" in on.text and "no API key" in on.text
    assert "(API key required)" in _state(require_key=True).text
    assert _state(listening_port=9000).tone == "starting"  # moving to another port
    failed = _state(error="port 8677 is in use", listening_port=None)
    assert failed.tone == "error" and failed.text == "Off: port 8677 is in use"

    panel = ServerPanel(Supervisor(), SettingsStore(tmp_path / "settings.json"))
    qtbot.addWidget(panel)
    for kind, view in panel.snippet_views.items():  # shown exactly as pasted: no notes
        assert view.toPlainText() == SNIPPETS[kind](panel.endpoint()), kind
    box = panel.endpoint_box
    assert box.state_tone() == "off" and box.url_label.text() == "http://127.0.0.1:8677"
    assert not box.apply_button.isEnabled()  # nothing typed to apply
    box.port_spin.setValue(8678)
    assert box.apply_button.isEnabled()
    box.port_spin.setValue(8677)
    assert not box.apply_button.isEnabled()
    box.copy_url_button.click()
    assert QGuiApplication.clipboard().text() == "http://127.0.0.1:8677"
    assert box.copy_url_button.text() == "Copied"
    qtbot.waitUntil(lambda: box.copy_url_button.text() == "Copy", timeout=5000)
    # The switch is a check box underneath: a click anywhere on it flips it.
    switch = panel.enabled_check
    switch.blockSignals(True)  # the flip alone, not the endpoint apply it would start
    label_end = QPoint(switch.width() - 4, switch.height() // 2)  # on the words, not the knob
    QTest.mouseClick(switch, Qt.MouseButton.LeftButton, pos=label_end)
    assert switch.isChecked()
    switch.blockSignals(False)
    panel.shutdown()


def test_status_words_and_tones() -> None:
    assert status_text(_row(1, "POST", "/v1/chat/completions", 200, finish_reason="stop")) == (
        "200 OK · stop"
    )
    assert status_text(_row(1, "POST", "/api/chat", 499, finish_reason="cancelled")) == (
        "499 Client closed"
    )
    assert [tone(r) for r in ROWS[:5]] == ["good", "good", "danger", "danger", "warn"]
    assert tone(_row(1, "GET", "/", 304)) == ""
    assert "API key" in status_hint(ROWS[2]) and status_hint(ROWS[0]) == ""
    assert "model name" in status_hint(ROWS[3])


def test_hidden_columns_come_back_whole_when_the_window_widens(
    qtbot: QtBot, arun, tmp_path: Path, file_keyring
) -> None:
    area, panel = _hosted(qtbot, arun, tmp_path, NARROW, "light")
    table = panel.log_table
    table.show_rows(ROWS[1:3])  # no generation yet: the token columns are narrow
    QApplication.processEvents()
    table.show_rows(ROWS)
    QApplication.processEvents()
    narrow_hidden = set(table.hidden_columns())
    assert narrow_hidden, "at 900 px some columns give way"
    apply_theme("dark")  # restyled (the header's font and padding) while hidden
    QApplication.processEvents()
    area.resize(1920 - RAIL, 1080 - CHROME)
    qtbot.waitUntil(lambda: not table.hidden_columns(), timeout=5000)
    table.show_rows(ROWS)  # the next poll
    header = table.horizontalHeader()
    for col, name in enumerate(LOG_COLUMNS):
        words = header.fontMetrics().horizontalAdvance(table.horizontalHeaderItem(col).text())
        assert table.columnWidth(col) >= words, f"{name} came back too narrow"
    total = sum(table.columnWidth(c) for c in range(len(LOG_COLUMNS)))
    assert total <= table.viewport().width()
    panel.shutdown()
