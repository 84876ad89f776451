"""Settings' Hugging Face account: log in with a token (kept where `hearth login` keeps
it, and said where), the account name from the Hub, log out, a rejected token, offline,
and the plain-text file store. Real keyring API (a file keyring), fake Hub over HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from fake_hub import FakeHub
from hearth.config.secrets import StoreChoice, get_hf_token, open_store
from hearth.hub.errors import access_error
from hearth.ui.app_settings import SettingsStore
from hearth.ui.pages.settings.hf_account_box import NOT_LOGGED_IN
from hearth.ui.pages.settings.page import SettingsPage
from hub_testing import isolated_hf  # noqa: F401 - autouse: a file keyring

pytestmark = pytest.mark.ui

GOOD = "hf_GoodToken1234"


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch):
    with FakeHub() as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        fake.valid_tokens.add(GOOD)
        fake.token_names[GOOD] = "ada"
        yield fake


def make_page(qtbot: QtBot, tmp_path: Path) -> SettingsPage:
    page = SettingsPage(SettingsStore(tmp_path / "settings.json"))
    qtbot.addWidget(page)
    page.show()
    return page


def test_log_in_shows_the_account_and_where_the_token_went_then_log_out(
    qtbot: QtBot, arun, hub: FakeHub, tmp_path: Path
) -> None:
    page = make_page(qtbot, tmp_path)
    box = page.hf_account

    async def scenario() -> None:
        await box.refresh_task
        assert box.status.text() == NOT_LOGGED_IN and not box.logout_button.isEnabled()
        qtbot.keyClicks(box.token_edit, GOOD)
        await box.log_in()
        assert box.status.text() == "Logged in as ada."
        assert get_hf_token() == GOOD
        # The file keyring of the tests is plain text, and the box says so.
        where = box.where.text()
        assert "plain text at" in where and "keyring.json" in where, where
        assert GOOD not in where and "hf_…1234" in where  # masked, never shown whole
        assert box.token_edit.text() == "" and box.logout_button.isEnabled()
        whoami = [r for r in hub.requests if r.path == "/api/whoami-v2"]
        assert whoami and whoami[-1].headers["authorization"] == f"Bearer {GOOD}"

        # Opened again (a new run): logged in, from the stored token.
        second_page = make_page(qtbot, tmp_path)
        again = second_page.hf_account
        await again.refresh_task
        assert again.status.text() == "Logged in as ada."

        await box.log_out()
        assert get_hf_token() is None
        assert box.status.text() == NOT_LOGGED_IN and "Token removed from" in box.where.text()

    arun(scenario())


def test_a_rejected_token_and_an_offline_hub_are_said(
    qtbot: QtBot, arun, hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = make_page(qtbot, tmp_path)
    box = page.hf_account

    async def scenario() -> None:
        await box.refresh_task
        box.token_edit.setText("hf_revoked")
        await box.log_in()
        assert "rejected this token" in box.status.text()
        monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
        box.token_edit.setText(GOOD)
        await box.log_in()
        assert "could not be reached" in box.status.text()
        assert get_hf_token() == GOOD  # kept for the downloads all the same
        box.token_edit.setText("hf_has space")
        await box.log_in()
        assert "not saved" in box.status.text() and get_hf_token() == GOOD

    arun(scenario())


def test_the_file_store_is_the_clis_store_file(
    qtbot: QtBot, arun, hub: FakeHub, tmp_path: Path
) -> None:
    page = make_page(qtbot, tmp_path)
    box = page.hf_account

    async def scenario() -> None:
        await box.refresh_task
        box.file_check.setChecked(True)
        box.token_edit.setText(GOOD)
        await box.log_in()
        assert page.store.settings.secret_store == "file"
        assert get_hf_token(open_store(StoreChoice.FILE)) == GOOD
        assert get_hf_token(open_store(StoreChoice.KEYRING)) is None
        assert "secrets.json" in box.where.text() and "mode 600" in box.where.text()

    arun(scenario())


def test_gated_message_points_at_the_settings_section() -> None:
    err = access_error(
        "meta/llama", status=401, error_code="GatedRepo", error_message=None, has_token=False
    )
    assert "Settings > Hugging Face account" in err.message and "hearth login" in err.message


def test_without_an_os_keyring_the_file_box_is_the_way(
    qtbot: QtBot, arun, hub: FakeHub, tmp_path: Path
) -> None:
    import keyring
    from keyring.backends.null import Keyring as NullKeyring

    keyring.set_keyring(NullKeyring())  # isolated_hf puts the previous one back
    page = make_page(qtbot, tmp_path)
    box = page.hf_account

    async def scenario() -> None:
        await box.refresh_task
        assert "no OS keyring" in box.where.text()
        box.token_edit.setText(GOOD)
        await box.log_in()
        status = box.status.text()
        assert "not saved" in status and "Keep it in a file instead" in status, status
        assert "--store" not in status  # the CLI's flag means nothing here
        box.file_check.setChecked(True)
        box.token_edit.setText(GOOD)
        await box.log_in()
        assert box.status.text() == "Logged in as ada."

    arun(scenario())
