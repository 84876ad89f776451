"""Add or edit one remote engine: its name, URL, kind and API key, with a Test that
shows the latency, what the engine is and the models it serves, before saving.

The test runs in Hearth's worker (the one probe, ``server/remote/probe.py``), reached
through ``WorkerClient.engines``; saving writes ``config/engines.py``'s registry on a
worker thread (the key goes to the secret store, never to a file or back to the
form). An edit keeps the saved key unless a new one is typed or "Forget" is ticked.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from hearth.config.engines import EngineConfigError, EngineKind, EngineRegistry, EngineSpec
from hearth.config.secrets import SecretStoreError
from hearth.supervisor import SupervisorError, WorkerClient, WorkerError
from hearth.supervisor.engines_api import EngineTest
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread

log = logging.getLogger(__name__)

WorkerSource = Callable[[], Awaitable[WorkerClient]]
"""Hands out the worker's client, starting a worker without a model if none runs."""

KINDS = (
    (EngineKind.OPENAI, "OpenAI-compatible: vLLM, llama-server, LM Studio, SGLang, Hearth"),
    (EngineKind.OLLAMA, "Ollama"),
)


def test_summary(result: EngineTest) -> str:
    """One line for a test: what answered, how fast, how many models; or why not."""
    if not result.ok:
        return f"Not reachable: {result.error or 'no answer'}"
    count = len(result.models)
    models = f"{count} model" if count == 1 else f"{count} models"
    return f"OK · {result.identity or 'answered'} · {result.latency_ms:.0f} ms · {models}"


def save_engine(
    registry: EngineRegistry,
    name: str,
    url: str,
    kind: EngineKind,
    new_key: str | None,
    *,
    editing: EngineSpec | None,
    forget_key: bool,
) -> EngineSpec:
    """Register (or replace) the engine; blocking (the keyring), so on a thread."""
    key = new_key
    if key is None and editing is not None and editing.has_key and not forget_key:
        key = registry.api_key(editing)  # re-saved as it is: the form never shows it
    return registry.add(name, url, kind, key, replace_existing=editing is not None)


class EngineDialog(QDialog):
    """The form; ``saved`` carries the engine's name once it is in the registry."""

    saved = Signal(str)

    def __init__(
        self,
        registry: EngineRegistry,
        worker: WorkerSource | None,
        parent: QWidget | None = None,
        *,
        editing: EngineSpec | None = None,
    ) -> None:
        super().__init__(parent)
        self.registry, self.worker, self.editing = registry, worker, editing
        self.setObjectName("engineDialog")
        self.setWindowTitle(f"Edit engine {editing.name}" if editing else "Add a remote engine")
        self._tasks = TaskSet()
        self.task: asyncio.Task[None] | None = None
        self.last_test: EngineTest | None = None
        self.name_field = QLineEdit(self)
        self.name_field.setAccessibleName("Engine name")
        self.name_field.setPlaceholderText("gpu-box")
        self.name_field.setToolTip("The prefix of its models in Hearth: gpu-box/qwen3-32b")
        self.url_field = QLineEdit(self)
        self.url_field.setAccessibleName("Engine URL")
        self.url_field.setPlaceholderText("http://gpu-box:8000")
        self.kind_combo = QComboBox(self)
        self.kind_combo.setAccessibleName("Engine kind")
        for kind, words in KINDS:
            self.kind_combo.addItem(words, kind.value)
        self.key_field = QLineEdit(self)
        self.key_field.setAccessibleName("Engine API key")
        self.key_field.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_field.setPlaceholderText("Optional; kept in the system keyring")
        self.forget_key = QCheckBox("Forget the saved key", self)
        self.forget_key.setVisible(False)
        if editing is not None:
            self.name_field.setText(editing.name)
            self.name_field.setReadOnly(True)  # the prefix of its models: remove to rename
            self.url_field.setText(editing.url)
            self.kind_combo.setCurrentIndex(0 if editing.kind is EngineKind.OPENAI else 1)
            if editing.has_key:
                self.key_field.setPlaceholderText("Saved; type a new one to replace it")
                self.forget_key.setVisible(True)
        self.test_button = QPushButton("Test", self)
        self.test_button.setAccessibleName("Test the engine")
        self.test_button.clicked.connect(self.test)
        self.result_label = QLabel(self)
        self.result_label.setObjectName("engineTestResult")
        self.result_label.setWordWrap(True)
        self.result_label.setAccessibleName("Test result")
        self.models_list = QListWidget(self)
        self.models_list.setAccessibleName("Models found")
        self.models_list.setMaximumHeight(110)
        self.models_list.setVisible(False)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel, self
        )
        self.save_button = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        self.save_button.setProperty("primary", True)
        self.buttons.accepted.connect(self.save)
        self.buttons.rejected.connect(self.reject)
        form = QFormLayout()
        form.addRow("Name", self.name_field)
        form.addRow("URL", self.url_field)
        form.addRow("Kind", self.kind_combo)
        form.addRow("API key", self.key_field)
        form.addRow("", self.forget_key)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.test_button)
        layout.addWidget(self.result_label)
        layout.addWidget(self.models_list)
        layout.addWidget(self.buttons)
        self.resize(520, 0)

    def _kind(self) -> EngineKind:
        return EngineKind(str(self.kind_combo.currentData()))

    def _busy(self, busy: bool) -> None:
        self.test_button.setEnabled(not busy)
        self.save_button.setEnabled(not busy)

    def test(self) -> asyncio.Task[None]:
        self.task = self._tasks.spawn(self._test(), name="engine-test")
        return self.task

    async def _test(self) -> None:
        self._busy(True)
        self.result_label.setText("Testing…")
        self.models_list.clear()
        self.models_list.setVisible(False)
        try:
            if self.worker is None:
                raise WorkerError("Tests run in Hearth's worker, which is not available here.")
            client = await self.worker()
            keep = self.editing is not None and not self.forget_key.isChecked()
            result = await client.engines.test(
                self.name_field.text().strip(),
                self.url_field.text().strip(),
                self._kind().value,
                api_key=self.key_field.text().strip() or None,
                use_saved_key=keep,
            )
        except (WorkerError, SupervisorError) as exc:
            self.result_label.setText(f"Could not test: {getattr(exc, 'message', exc)}")
            return
        finally:
            self._busy(False)
        self.last_test = result
        self.result_label.setText(test_summary(result))
        self.models_list.addItems([m.id for m in result.models])
        self.models_list.setVisible(bool(result.models))

    def save(self) -> asyncio.Task[None]:
        self.task = self._tasks.spawn(self._save(), name="engine-save")
        return self.task

    async def _save(self) -> None:
        self._busy(True)
        name, url, kind = (
            self.name_field.text().strip(),
            self.url_field.text().strip(),
            self._kind(),
        )
        key, forget = self.key_field.text().strip() or None, self.forget_key.isChecked()
        try:  # the widgets are read here, on the Qt thread; the keyring on another
            spec = await in_thread(
                lambda: save_engine(
                    self.registry, name, url, kind, key, editing=self.editing, forget_key=forget
                )
            )
        except (EngineConfigError, SecretStoreError) as exc:
            self.result_label.setText(f"Not saved: {getattr(exc, 'message', None) or exc}")
            return
        finally:
            self._busy(False)
        self.key_field.clear()  # the key is in the store now; nothing keeps it here
        self.saved.emit(spec.name)
        self.accept()
