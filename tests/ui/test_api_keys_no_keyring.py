"""The Server page's API keys card on a machine whose keyring cannot hold keys: the card
says so in the app's own words, offers the file store with its risk in one line, laid
out inside the card, and the switch makes keys work there (for the worker and the CLI
too: the ``secret_store`` setting). No command-line advice over the table."""

from __future__ import annotations

import json
from collections.abc import Iterator

import keyring
import keyring.backends.fail
import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtWidgets import QApplication, QLabel, QScrollArea
from pytestqt.qtbot import QtBot

from hearth.config.key_index import KeyEntry, read_index, write_index
from hearth.config.paths import default_paths
from hearth.config.secrets import StoreChoice, configured_choice
from hearth.supervisor import Supervisor
from hearth.ui.app_settings import SettingsStore
from hearth.ui.pages.server.api_keys_box import FILE_RISK, KEYS_TABLE_MIN_PX, KeyringTrouble
from hearth.ui.pages.server.panel import ServerPanel
from hearth.ui.pages.settings.hf_account_box import HfAccountBox
from hearth.ui.widgets.section import Section
from page_frame import NARROW, WIDE, assert_controls_whole, host, visible_controls

pytestmark = pytest.mark.ui

CLI_WORDS = ("--store", "HEARTH_SECRET_STORE", "run the command", "hearth keys")


@pytest.fixture
def no_keyring(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """keyring's fail backend, as on a server or in a container: no keyring at all."""
    previous = keyring.get_keyring()
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    keyring.set_keyring(keyring.backends.fail.Keyring())
    yield
    keyring.set_keyring(previous)


def _hosted(qtbot: QtBot, arun, window: tuple[int, int]) -> tuple[QScrollArea, ServerPanel]:
    """The page in its scroll area (keep both: the area owns the panel)."""
    panel = ServerPanel(Supervisor(), SettingsStore(default_paths().settings_file))
    area = host(qtbot, panel, window)
    arun(panel.refresh_keys())
    QApplication.processEvents()
    return area, panel


def _card_texts(panel: ServerPanel) -> str:
    box = panel.keys_box
    return " ".join(w.text() for w in box.findChildren(QLabel) if w.isVisibleTo(box))


def _rect_in(widget, ancestor) -> QRect:  # type: ignore[no-untyped-def]
    return QRect(widget.mapTo(ancestor, QPoint(0, 0)), widget.size())


@pytest.mark.parametrize("window", [WIDE, NARROW], ids=["1400x900", "900x650"])
def test_no_keyring_offers_the_file_store_inside_the_card(
    qtbot: QtBot, arun, no_keyring: None, window: tuple[int, int]
) -> None:
    area, panel = _hosted(qtbot, arun, window)
    box, notice = panel.keys_box, panel.keys_box.keyring_notice
    assert notice.isVisibleTo(box)
    assert notice.problem.text() == KeyringTrouble.MISSING.value
    secrets_file = default_paths().secrets_file
    assert notice.risk.text() == FILE_RISK and "unencrypted" in FILE_RISK
    assert notice.use_file_button.toolTip() == str(secrets_file)  # where, on hover
    assert not any(word in _card_texts(panel) for word in CLI_WORDS), _card_texts(panel)
    assert not box.keys_message.isVisibleTo(box)  # nothing printed over the table
    assert not box.create_button.isEnabled() and not box.key_name.isEnabled()
    # Laid out in the card: above the key rows, never over the table, nothing cut.
    card = box.rect()
    notice_rect, table_rect = _rect_in(notice, box), _rect_in(box.keys_table, box)
    create_rect = _rect_in(box.create_button, box)
    buttons_rect = _rect_in(box.copy_key_button, box)
    assert card.contains(notice_rect)
    assert notice_rect.bottom() < create_rect.top() < table_rect.top()
    assert table_rect.bottom() < buttons_rect.top() and card.contains(buttons_rect)
    assert table_rect.height() >= KEYS_TABLE_MIN_PX
    for label in (notice.problem, notice.risk):  # every wrapped line shown
        assert label.height() >= label.heightForWidth(label.width()), label.text()
    sections = [s for s in panel.findChildren(Section) if s.isVisibleTo(panel)]
    controls = visible_controls(panel)
    assert notice.use_file_button in controls
    assert_controls_whole(controls, sections, area.viewport())

    settings_page = HfAccountBox(panel.store)  # the app's one settings object
    qtbot.addWidget(settings_page)
    assert not settings_page.file_check.isChecked()

    qtbot.mouseClick(notice.use_file_button, Qt.MouseButton.LeftButton)
    arun(arun.wait_until(lambda: not notice.isVisibleTo(box), 10, "the switch"))
    assert box.create_button.isEnabled() and box.key_name.isEnabled()
    assert box.keys_message.text() == f"API keys are now kept in {secrets_file}."
    saved = json.loads(default_paths().settings_file.read_text())
    assert saved["secret_store"] == "file"
    assert configured_choice() is StoreChoice.FILE  # what the worker and CLI now read

    assert arun(box.add_key("laptop"))
    stored = json.loads(secrets_file.read_text())["secrets"]
    assert "api-keys" in stored
    index = read_index(default_paths().key_index_file)
    assert index is not None and [k.name for k in index.keys_of("file") or ()] == ["laptop"]
    assert [k.name for k in box.keys] == ["laptop"] and box.new_key_field.text().startswith("hk-")

    settings_page.show()  # Settings, shown later, agrees with the switch
    assert settings_page.file_check.isChecked()
    panel.shutdown()


def test_a_locked_keyring_with_keys_says_so_in_the_card(
    qtbot: QtBot, arun, locked_keyring: None
) -> None:
    entry = KeyEntry("desktop", 1.0, "hk-…abcd")
    write_index(default_paths().key_index_file, "keyring", (entry,))
    _area, panel = _hosted(qtbot, arun, WIDE)
    box = panel.keys_box
    assert box.keyring_notice.isVisibleTo(box)
    assert box.keyring_notice.problem.text() == KeyringTrouble.UNREADABLE.value
    assert not any(word in _card_texts(panel) for word in CLI_WORDS), _card_texts(panel)
    assert box.keys == [] and not box.create_button.isEnabled()
    panel.shutdown()


def test_a_working_keyring_shows_no_notice(qtbot: QtBot, arun, file_keyring: None) -> None:
    _area, panel = _hosted(qtbot, arun, WIDE)
    box = panel.keys_box
    assert not box.keyring_notice.isVisibleTo(box) and box.create_button.isEnabled()
    assert arun(box.add_key("laptop"))  # in the keyring: no secrets file
    assert not default_paths().secrets_file.exists()
    panel.shutdown()
