"""The Server panel: the local OpenAI-compatible endpoint, its API keys, a request log.

Four cards (``ui/widgets/section.py``), laid out by ``server_columns.ServerColumns``: two
columns on a wide window, stacked on a narrow one. "Endpoint" (``endpoint_box``) opens
with the on/off switch, a coloured state chip and the address with Copy, as LM Studio's
Developer page does; "API keys" is ``api_keys_box.ApiKeysBox``; "Ready-to-paste
configuration" (``snippet_tabs.SnippetsBox``) shows each client's config exactly as
pasted, with a placeholder for the key, and its Copy buttons put the selected (or
newest) key in; "Requests" (``request_log_table.RequestsBox``) is the live log, polled
about once a second while the panel is visible.

The choices go to the Supervisor as ``EndpointOptions``: "on" binds the chosen port
(every interface with LAN); "off" serves only Hearth itself (the app's own token).
"On" with no worker running (or left on at launch) starts one without a model: it lists
the library and loads the model a request names, as ``hearth serve`` does.
On loopback clients need no key unless "Require an API key" is ticked; LAN always
needs one, so LAN and that box both need at least one key. Every change (on/off, port,
LAN, the key rule, creating or revoking keys) applies live: the model stays loaded and
the request log goes on (``Supervisor.set_endpoint``). If the keys cannot be read, the
endpoint stays off and the status line says why (fail closed).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from dataclasses import replace
from typing import Any

from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QGuiApplication, QHideEvent, QResizeEvent, QShowEvent
from PySide6.QtWidgets import QCheckBox, QWidget

from hearth.config.api_keys import ApiKey
from hearth.core.client_config import KEY_PLACEHOLDER, SNIPPETS, Endpoint
from hearth.supervisor import (
    EndpointOptions,
    ModelLoadError,
    Supervisor,
    SupervisorError,
    WorkerError,
)
from hearth.ui.app_settings import SettingsStore
from hearth.ui.pages.server.api_keys_box import ApiKeysBox
from hearth.ui.pages.server.columns import ServerColumns
from hearth.ui.pages.server.endpoint_box import EndpointBox, endpoint_state
from hearth.ui.pages.server.request_log_table import RequestsBox
from hearth.ui.pages.server.snippet_tabs import SnippetsBox
from hearth.ui.tasks import TaskSet
from hearth.ui.widgets.copy_feedback import flash_copied

log = logging.getLogger(__name__)

POLL_MS = 1000
LAN_NEEDS_KEY = (
    "Create an API key first: on the LAN, anyone who can reach this machine could "
    "use the model, so Hearth only listens there with a key."
)
REQUIRE_NEEDS_KEY = "Create an API key first: requiring a key needs one to exist."
LAST_KEY_REVOKED = "Off: the last API key was revoked, and this endpoint requires one."


def lan_address() -> str:
    """This machine's address on the local network (no packet is sent)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.255.255.255", 1))
            return str(probe.getsockname()[0])
    except OSError:
        return "127.0.0.1"


class ServerPanel(QWidget):
    """The endpoint switch, its keys, client snippets and the live request log."""

    endpoint_changed = Signal()  # after a change was applied (or failed: see status_label)
    keys_changed = Signal()
    log_updated = Signal()

    def __init__(
        self, supervisor: Supervisor, store: SettingsStore, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setAccessibleName("Server panel")
        self.supervisor = supervisor
        self.store = store
        self.requests: list[dict[str, Any]] = []
        self._tasks = TaskSet()
        self._apply_task: asyncio.Task[None] | None = None
        self._poll_task: asyncio.Task[None] | None = None
        self._lan_ip: str | None = None
        s = store.settings
        supervisor.endpoint = EndpointOptions(
            enabled=s.endpoint_enabled,
            port=s.endpoint_port,
            lan=s.endpoint_lan,
            require_key=s.endpoint_require_key,
        )
        self._build()
        self.timer = QTimer(self)
        self.timer.setInterval(POLL_MS)
        self.timer.timeout.connect(self.poll_requests)
        QTimer.singleShot(0, self._start_up)

    # ------------------------------------------------------------------ build
    def _build(self) -> None:
        s = self.store.settings
        self.endpoint_box = box = EndpointBox(
            enabled=s.endpoint_enabled,
            port=s.endpoint_port,
            lan=s.endpoint_lan,
            require_key=s.endpoint_require_key,
            parent=self,
        )
        self.enabled_check, self.port_spin = box.enabled_check, box.port_spin
        self.lan_check, self.require_key_check = box.lan_check, box.require_key_check
        self.apply_button, self.status_label = box.apply_button, box.status_label
        self.apply_button.clicked.connect(self.apply_endpoint)
        self.port_spin.valueChanged.connect(lambda _port: self._port_edited())
        self.enabled_check.toggled.connect(lambda _on: self.apply_endpoint())
        self.lan_check.toggled.connect(lambda _on: self.apply_endpoint())
        self.require_key_check.toggled.connect(lambda _on: self.apply_endpoint())

        self.keys_box = ApiKeysBox(self.store, self)
        self.keys_box.keyring_notice.use_file_button.clicked.connect(self.use_file_store)
        self.keys_box.create_button.clicked.connect(self.create_key)
        self.keys_box.revoke_button.clicked.connect(self.revoke_selected_key)
        self.keys_box.keys_changed.connect(self._keys_shown)

        self.snippets_box = SnippetsBox(self)
        self.snippet_tabs = self.snippets_box.tabs
        self.snippet_tabs.copy_requested.connect(self.copy_snippet)
        self.snippet_views = self.snippet_tabs.views
        self.copy_buttons = self.snippet_tabs.copy_buttons

        self.requests_box = RequestsBox(self)
        self.log_table = self.requests_box.table
        self.columns = ServerColumns(
            self,
            side=(self.endpoint_box, self.keys_box),
            main=(self.snippets_box, self.requests_box),
        )
        self.supervisor_changed()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self.columns.fit(self.width())

    # ------------------------------------------------------------------ endpoint
    def endpoint(self) -> Endpoint:
        opts = self.supervisor.endpoint
        if opts.lan:
            if self._lan_ip is None:
                self._lan_ip = lan_address()
            host = self._lan_ip
        else:
            host = "127.0.0.1"
        return Endpoint(
            base_url=f"http://{host}:{opts.port}",
            model=self.supervisor.model_id or "model",
            keyed=opts.key_required,
        )

    def supervisor_changed(self) -> None:
        """Refresh what depends on the worker (call on every worker status change)."""
        sup = self.supervisor
        opts = sup.endpoint
        if sup.endpoint_error:
            self._set_checked(self.enabled_check, False)
        url = self.endpoint().base_url
        state = endpoint_state(
            enabled=opts.enabled,
            error=sup.endpoint_error,
            worker_running=sup.process is not None,
            listening_port=sup.endpoint_port,
            port=opts.port,
            url=url,
            lan=opts.lan,
            require_key=opts.require_key,
            model_loaded=bool(sup.model_id),
        )
        applying = self._apply_task is not None and not self._apply_task.done()
        self.endpoint_box.show_state(state, url, message=not applying)
        self.log_table.set_endpoint_on(state.tone == "on")
        self._port_edited()
        self._refresh_snippets()

    def _port_edited(self) -> None:
        """Apply is there for a typed port: enabled only while it differs from the one
        in use (the switches apply at once)."""
        self.apply_button.setEnabled(self.port_spin.value() != self.supervisor.endpoint.port)

    def _refresh_snippets(self) -> None:
        self.snippet_tabs.show_endpoint(
            self.endpoint(),
            enabled=self.supervisor.endpoint.enabled,
            loaded=bool(self.supervisor.model_id),
        )

    def apply_endpoint(self) -> asyncio.Task[None] | None:
        """Turn the endpoint on/off with the port and LAN choice shown, live: the model
        stays loaded."""
        wanted = EndpointOptions(
            enabled=self.enabled_check.isChecked(),
            port=self.port_spin.value(),
            lan=self.lan_check.isChecked(),
            require_key=self.require_key_check.isChecked(),
        )
        refused: str | None = None
        if wanted.lan and not self.keys:
            self._set_checked(self.lan_check, False)
            wanted, refused = replace(wanted, lan=False), LAN_NEEDS_KEY
        if wanted.require_key and not self.keys:
            self._set_checked(self.require_key_check, False)
            wanted, refused = replace(wanted, require_key=False), REQUIRE_NEEDS_KEY
        current = self.supervisor
        unchanged = (
            wanted == current.endpoint
            and not current.endpoint_error
            and (
                not wanted.enabled  # on with no worker: set_endpoint starts one
                or (current.process is not None and current.endpoint_port == wanted.port)
            )
        )
        if unchanged:
            if refused is None:
                self.supervisor_changed()
            else:
                self.status_label.setText(refused)
            return None
        s = self.store.settings
        s.endpoint_enabled, s.endpoint_port = wanted.enabled, wanted.port
        s.endpoint_lan, s.endpoint_require_key = wanted.lan, wanted.require_key
        self.store.save()
        if self._apply_task is not None and not self._apply_task.done():
            self._apply_task.cancel()
        self._apply_task = self._tasks.spawn(self._apply(wanted, refused), name="endpoint-apply")
        return self._apply_task

    @staticmethod
    def _set_checked(box: QCheckBox, on: bool) -> None:
        """Show ``on`` without it counting as the user's click."""
        box.blockSignals(True)
        box.setChecked(on)
        box.blockSignals(False)

    async def _apply(self, wanted: EndpointOptions, refused: str | None) -> None:
        if self.supervisor.process is not None:
            self.status_label.setText("Applying the endpoint settings…")
        elif wanted.enabled:
            self.status_label.setText("Starting the endpoint…")
        try:
            await self.supervisor.set_endpoint(wanted)
        except (SupervisorError, ModelLoadError) as exc:
            self._apply_task = None
            self.status_label.setText(f"The endpoint could not start: {exc}")
            self._refresh_snippets()
            self.endpoint_changed.emit()
            return
        self._apply_task = None
        self.supervisor_changed()
        if refused is not None:
            self.status_label.setText(refused)
        self.endpoint_changed.emit()

    # ------------------------------------------------------------------ keys
    @property
    def keys(self) -> list[ApiKey]:
        """The keyring's keys as last read by the keys box."""
        return self.keys_box.keys

    def _keys_shown(self) -> None:
        self._refresh_snippets()
        self.keys_changed.emit()

    def refresh_keys(self) -> asyncio.Task[None]:
        return self._tasks.spawn(self.keys_box.reload(), name="keys-refresh")

    def use_file_store(self) -> asyncio.Task[None]:
        return self._tasks.spawn(self.keys_box.use_file_store(), name="keys-file-store")

    def _start_up(self) -> asyncio.Task[None]:
        return self._tasks.spawn(self._serve_if_on(), name="endpoint-start-up")

    async def _serve_if_on(self) -> None:
        """At launch: read the keys, then, if the endpoint was left on, serve it now, with
        no model loaded if none is (a request naming a library model loads it), rather
        than wait for the user's first load."""
        await self.keys_box.reload()
        if self.supervisor.endpoint.enabled and self.supervisor.process is None:
            self.apply_endpoint()

    def create_key(self) -> asyncio.Task[None] | None:
        name = self.keys_box.new_key_name()
        return self._tasks.spawn(self._create(name), name="key-create")

    async def _create(self, name: str) -> None:
        if not await self.keys_box.add_key(name):
            return
        if self.supervisor.endpoint.key_required and self.supervisor.process is not None:
            await self._reload_keys()  # the worker accepts the new key at once

    async def _reload_keys(self) -> None:
        """Have the running worker re-read the keys (live; no model reload)."""
        try:
            await self.supervisor.set_endpoint(self.supervisor.endpoint)
        except (SupervisorError, ModelLoadError) as exc:
            self.status_label.setText(f"The endpoint could not change: {exc}")
        self.supervisor_changed()

    def revoke_selected_key(self) -> asyncio.Task[None] | None:
        key = self.keys_box.key_to_revoke()
        if key is None:
            return None
        return self._tasks.spawn(self._revoke(key), name="key-revoke")

    async def _revoke(self, key: ApiKey) -> None:
        if not await self.keys_box.revoke(key):
            return
        opts = self.supervisor.endpoint
        closed = opts.key_required and not self.keys
        if closed:
            # The last key is gone while one is required: fail closed, turn it off
            # (never open it up to key-less clients behind the user's back).
            for box in (self.enabled_check, self.lan_check, self.require_key_check):
                self._set_checked(box, False)
            opts = replace(opts, enabled=False, lan=False, require_key=False)
            s = self.store.settings
            s.endpoint_enabled = s.endpoint_lan = s.endpoint_require_key = False
            self.store.save()
        if self.supervisor.process is None:
            self.supervisor.endpoint = opts
        else:
            try:  # the revoked key stops working now (live)
                await self.supervisor.set_endpoint(opts)
            except (SupervisorError, ModelLoadError) as exc:
                self.status_label.setText(f"The endpoint could not change: {exc}")
            self.supervisor_changed()
        if closed:
            self.status_label.setText(LAST_KEY_REVOKED)

    # ------------------------------------------------------------------ snippets
    def snippet_text(self, kind: str) -> str:
        """The snippet as copied: with the selected (or newest) key in place."""
        text = SNIPPETS[kind](self.endpoint())
        key = self.keys_box.selected_key()
        if key is not None:
            text = text.replace(KEY_PLACEHOLDER, key.key)
        return text

    def copy_snippet(self, kind: str) -> None:
        QGuiApplication.clipboard().setText(self.snippet_text(kind))
        flash_copied(self.copy_buttons[kind])

    # ------------------------------------------------------------------ request log
    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        self.timer.start()
        self.poll_requests()

    def hideEvent(self, event: QHideEvent) -> None:  # noqa: N802 - Qt override
        self.timer.stop()
        super().hideEvent(event)

    def poll_requests(self) -> asyncio.Task[None] | None:
        if self._poll_task is not None and not self._poll_task.done():
            return None
        if self.supervisor.client is None or not self.supervisor.ready:
            return None
        self._poll_task = self._tasks.spawn(self._poll(), name="request-log")
        return self._poll_task

    async def _poll(self) -> None:
        client = self.supervisor.client
        if client is None:
            return
        try:
            rows = await client.request_log(50)
        except WorkerError as exc:
            log.debug("request log not available: %s", exc)
            return
        self.requests = rows
        self._show_requests()
        self.log_updated.emit()

    def _show_requests(self) -> None:
        self.log_table.show_rows(self.requests)

    def shutdown(self) -> None:
        self.timer.stop()
        self._tasks.cancel_all()
