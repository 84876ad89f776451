"""Settings' "Hugging Face account": the token for gated and private models.

Logging in stores the token the way ``hearth login`` does (``hearth.config.secrets``:
the OS keyring by default) and says where it really went, e.g. "the OS keyring
(SecretService Keyring)" or "plain text at PATH (mode 600)". On a machine with no OS
keyring the store refuses; "Keep it in a file instead" is the CLI's ``--store file``
(saved as the ``secret_store`` setting). The account name comes from the Hub's
``whoami`` when online; offline the token is kept and that is said. Keyring and Hub
calls run on worker threads.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from huggingface_hub.errors import HfHubHTTPError
from PySide6.QtCore import QUrl, Signal
from PySide6.QtGui import QDesktopServices, QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from hearth.config.secrets import (
    SecretLocation,
    SecretStore,
    SecretStoreError,
    StoreChoice,
    delete_hf_token,
    get_hf_token,
    mask,
    set_hf_token,
    store_for_setting,
)
from hearth.hub.client import hub_endpoint, make_api
from hearth.ui.app_settings import SettingsStore
from hearth.ui.style.tokens import SPACE
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread
from hearth.ui.widgets.section import Section

log = logging.getLogger(__name__)

DESCRIPTION = (
    "A token lets Hearth download gated models (Llama, Gemma and others whose licence "
    "you accepted on Hugging Face) and your private ones."
)
NOT_LOGGED_IN = "Not logged in."


@dataclass(frozen=True)
class Account:
    """What the Hub says about a token: the account name, or why it can't say."""

    name: str | None
    rejected: bool = False  # the Hub answered 401: the token is wrong or revoked
    offline: bool = False


def whoami(token: str) -> Account:
    """The token's account (blocking: the Hub's ``/api/whoami-v2``)."""
    try:
        info = make_api(hub_endpoint(), token).whoami(token=token)
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else None
        if status in (401, 403):
            return Account(None, rejected=True)
        log.info("the Hub could not say whose token this is: %s", exc)
        return Account(None, offline=True)
    except Exception as exc:  # no network, DNS, TLS...
        log.info("the Hub could not be reached to check the token: %s", exc)
        return Account(None, offline=True)
    name = info.get("name") if isinstance(info, dict) else None
    return Account(str(name) if name else None)


class HfAccountBox(Section):
    changed = Signal()  # logged in or out

    def __init__(self, store: SettingsStore, parent: QWidget | None = None) -> None:
        super().__init__("Hugging Face account", DESCRIPTION, parent, icon_kind="account")
        self.setObjectName("hfAccountBox")
        self.settings_store = store
        self._tasks = TaskSet()
        self.account: Account | None = None
        self.status = QLabel(NOT_LOGGED_IN, self)
        self.status.setWordWrap(True)
        self.status.setAccessibleName("Hugging Face account status")
        self.where = QLabel(self)
        self.where.setProperty("role", "muted")
        self.where.setWordWrap(True)
        self.where.setAccessibleName("Where the token is stored")
        self.token_edit = QLineEdit(self)
        self.token_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.token_edit.setPlaceholderText("Paste a token: hf_…")
        self.token_edit.setAccessibleName("Hugging Face token")
        self.token_edit.returnPressed.connect(self.log_in)
        self.login_button = QPushButton("Log in", self)
        self.login_button.setAccessibleName("Log in to Hugging Face with this token")
        self.login_button.setProperty("primary", True)
        self.login_button.clicked.connect(lambda _c=False: self.log_in())
        self.logout_button = QPushButton("Log out", self)
        self.logout_button.setAccessibleName("Log out of Hugging Face (forget the token)")
        self.logout_button.clicked.connect(lambda _c=False: self.log_out())
        self.logout_button.setEnabled(False)
        self.tokens_button = QPushButton("Create a token ↗", self)
        self.tokens_button.setAccessibleName("Create a read token on Hugging Face")
        self.tokens_button.clicked.connect(lambda _c=False: self.open_tokens_page())
        self.file_check = QCheckBox(
            "Keep it in a file instead of the OS keyring (plain text, readable only by you)",
            self,
        )
        self.file_check.setAccessibleName("Keep the token in a file instead of the keyring")
        self.file_check.setChecked(store.settings.secret_store == StoreChoice.FILE.value)
        row = QHBoxLayout()
        row.setSpacing(SPACE["s"])
        row.addWidget(self.token_edit, 1)
        row.addWidget(self.login_button)
        row.addWidget(self.logout_button)
        row.addWidget(self.tokens_button)
        self.body.addWidget(self.status)
        self.body.addLayout(row)
        self.body.addWidget(self.file_check)
        self.body.addWidget(self.where)
        self.refresh_task = self._tasks.spawn(self._refresh(), name="hf-account")
        # A box closed while the keyring or the Hub answers: drop the answer.
        self.destroyed.connect(lambda _obj=None, tasks=self._tasks: tasks.cancel_all())

    # ------------------------------------------------------------------ store
    def secret_store(self) -> SecretStore:
        """The configured store (``HEARTH_SECRET_STORE`` wins, as for the CLI)."""
        return store_for_setting(self.settings_store.settings.secret_store)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        # The Server page's API keys card may have switched the store meanwhile; a
        # stale box here would switch it back on the next log-in.
        in_file = self.settings_store.settings.secret_store == StoreChoice.FILE.value
        self.file_check.setChecked(in_file)
        super().showEvent(event)

    def tokens_url(self) -> QUrl:
        return QUrl(f"{hub_endpoint()}/settings/tokens")

    def open_tokens_page(self) -> None:
        QDesktopServices.openUrl(self.tokens_url())

    # ------------------------------------------------------------------ actions
    async def _refresh(self) -> None:
        try:
            store = self.secret_store()
            token = await in_thread(get_hf_token, store)
            where = await in_thread(store.location)
        except SecretStoreError as exc:
            self.status.setText(f"Can't read the token: {exc.message}")
            return
        if not token:
            self._show_logged_out(where)
            return
        self.where.setText(f"Token {mask(token)} is stored in {where.describe()}.")
        self.logout_button.setEnabled(True)
        self.status.setText("Checking the account with Hugging Face…")
        self._show_account(await in_thread(whoami, token))

    def log_in(self) -> asyncio.Task[None] | None:
        token = self.token_edit.text().strip()
        if not token:
            self.status.setText("Paste a token first (Create a token ↗ opens the page).")
            return None
        return self._tasks.spawn(self._log_in(token), name="hf-login")

    async def _log_in(self, token: str) -> None:
        self.login_button.setEnabled(False)
        try:
            if self.file_check.isChecked() != (
                self.settings_store.settings.secret_store == StoreChoice.FILE.value
            ):
                choice = StoreChoice.FILE if self.file_check.isChecked() else StoreChoice.KEYRING
                self.settings_store.settings.secret_store = choice.value
                self.settings_store.save()
            store = self.secret_store()
            where: SecretLocation = await in_thread(set_hf_token, token, store)
        except (SecretStoreError, ValueError) as exc:
            if isinstance(exc, SecretStoreError) and not self.file_check.isChecked():
                # The store's message names the CLI's flag; here the checkbox is the way.
                first = exc.message.split(". ")[0].rstrip(".")
                message = f"{first}. Tick “Keep it in a file instead” below and log in again."
            else:
                message = exc.message if isinstance(exc, SecretStoreError) else str(exc)
            self.status.setText(f"The token was not saved. {message}")
            return
        finally:
            self.login_button.setEnabled(True)
        self.token_edit.clear()
        self.where.setText(where.saved_message(f"Token {mask(token)}"))
        self.logout_button.setEnabled(True)
        self.status.setText("Token saved. Checking the account with Hugging Face…")
        self._show_account(await in_thread(whoami, token))
        self.changed.emit()

    def log_out(self) -> asyncio.Task[None]:
        return self._tasks.spawn(self._log_out(), name="hf-logout")

    async def _log_out(self) -> None:
        try:
            store = self.secret_store()
            removed = await in_thread(delete_hf_token, store)
            where = await in_thread(store.location)
        except SecretStoreError as exc:
            self.status.setText(f"The token was not removed. {exc.message}")
            return
        self.account = None
        self._show_logged_out(where)
        self.where.setText(
            f"Token removed from {where.describe()}."
            if removed
            else f"No token was stored in {where.describe()}."
        )
        self.changed.emit()

    # ------------------------------------------------------------------ display
    def _show_logged_out(self, where: SecretLocation) -> None:
        self.status.setText(NOT_LOGGED_IN)
        if where.plaintext or where.os_keyring:
            self.where.setText(f"A token is kept in {where.describe()}.")
        else:
            self.where.setText(
                "This machine has no OS keyring: tick “Keep it in a file instead” to log in."
            )
        self.logout_button.setEnabled(False)

    def _show_account(self, account: Account) -> None:
        self.account = account
        if account.name:
            self.status.setText(f"Logged in as {account.name}.")
        elif account.rejected:
            self.status.setText(
                "Hugging Face rejected this token (wrong, expired or revoked). Paste a "
                "valid 'read' token and log in again."
            )
        else:
            self.status.setText(
                "Token saved. Hugging Face could not be reached to check the account; "
                "it will be used for downloads."
            )
