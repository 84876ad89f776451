"""The model page's downloads: what each row's button does and says, for the repo shown.

A row's button follows its file's download (``download_button``): "Download" starts it
(a row that won't fit asks first, ``fit_confirm``), "Retry" or "Resume" resumes a failed
or paused one, and "Load", once the verified file is on disk, asks for the Load dialog
(``load_requested``). The app's download manager reports every repo's downloads; only
the shown repo's move its buttons.

Kept apart from ``model_page``, which lists the repo and judges its fit: this part owns
the downloads' state (the latest event of each file, the download the status line
names, the open "won't fit" question) and reads the page only through ``ShownRepo``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Protocol

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QSpinBox, QWidget

from hearth.hardware.fit import FitEstimate, FitVerdict
from hearth.hub import DownloadEvent, DownloadState, GgufModel, RepoListing
from hearth.hub.names import local_model_path
from hearth.hub.sidecar import part_path
from hearth.ui.pages.common import error_text
from hearth.ui.pages.discover.download_button import (
    LOAD,
    RESUME,
    RETRY,
    ButtonState,
    button_state,
    show_state,
)
from hearth.ui.pages.discover.fit_confirm import ask_wont_fit
from hearth.ui.pages.discover.quant_table import QuantTable
from hearth.ui.pages.services import AppServices
from hearth.ui.threads import in_thread
from hearth.ui.widgets.page_style import StatusLabel

log = logging.getLogger(__name__)


def on_disk(paths: list[Path]) -> bool:
    """Every file verified and in place (no partial download beside it)."""
    return all(p.is_file() and not part_path(p).exists() for p in paths)


class ShownRepo(Protocol):
    """What the downloads read of the model page (which is one): the repo shown, its
    files once listed, their fit, and the context that fit was asked at."""

    @property
    def repo_id(self) -> str: ...
    @property
    def listing(self) -> RepoListing | None: ...
    @property
    def estimates(self) -> dict[str, FitEstimate]: ...
    @property
    def ctx_spin(self) -> QSpinBox: ...


class RepoDownloads(QObject):
    """The shown repo's downloads; ``clicked`` is each row's button's action."""

    download_started = Signal(str)  # the file name
    load_requested = Signal(object)  # Path of a downloaded model's first file

    def __init__(
        self,
        services: AppServices,
        shown: ShownRepo,
        table: QuantTable,
        status: StatusLabel,
        parent: QWidget,
    ) -> None:
        """``parent`` (the page) also holds the "won't fit" question."""
        super().__init__(parent)
        self.services = services
        self.shown = shown
        self.table = table
        self.status = status
        self.parent_widget = parent
        self.confirm_box: QWidget | None = None  # the open "won't fit" question
        self._events: dict[str, DownloadEvent] = {}  # file path in the repo -> latest
        self._downloading: str | None = None  # label named in the status line
        self._warn = ""  # "it won't fit" note of that download
        services.download_event.connect(self.on_event)

    @property
    def downloading(self) -> str | None:
        """The download the status line names (its label), until it is done."""
        return self._downloading

    def reset(self) -> None:
        """Another repo is opened: nothing of the last one's downloads is shown."""
        self._events = {}
        self._downloading = None

    def dest(self, path_in_repo: str) -> Path:
        models_dir = self.services.paths.models_dir
        return local_model_path(models_dir, self.shown.repo_id, path_in_repo)

    async def mark_downloaded(self, listing: RepoListing) -> None:
        """Rows already on disk say Load; downloads under way show their progress."""
        paths = {m.name: [self.dest(f.path) for f in m.files] for m in listing.models}
        done = await in_thread(lambda: {n: on_disk(p) for n, p in paths.items()})
        for model in listing.models:
            if done.get(model.name):
                self._set_button(model, ButtonState(LOAD, True))
        if self.services.has_downloads:
            for handle in self.services.downloads.downloads():
                self.on_event(handle.snapshot())

    def _model_of(self, event: DownloadEvent) -> GgufModel | None:
        listing = self.shown.listing
        if listing is None or event.repo_id != self.shown.repo_id:
            return None
        for model in listing.models:
            if any(f.path == event.filename for f in model.files):
                return model
        return None

    def on_event(self, event: DownloadEvent) -> None:
        model = self._model_of(event)
        if model is None:
            return
        self._events[event.filename] = event
        state = button_state(model, [self._events.get(f.path) for f in model.files])
        label = model.quant or model.name
        self._set_button(model, state)
        if state.done and self._downloading == label:
            self._downloading = None
            self.status.say(f"{label} is downloaded: Load it from its row.{self._warn}")

    def _set_button(self, model: GgufModel, state: ButtonState) -> None:
        btn = self.table.buttons.get(model.name)
        if btn is not None:
            show_state(btn, state, model.quant or model.name)

    # ------------------------------------------------------------------ actions
    def clicked(self, model: GgufModel) -> None:
        btn = self.table.buttons.get(model.name)
        text = btn.text() if btn is not None else "Download"
        if text == LOAD:
            self.load_requested.emit(self.dest(model.files[0].path))
        elif text in (RETRY, RESUME):
            for f in model.files:
                event = self._events.get(f.path)
                if event is not None and event.state in (
                    DownloadState.FAILED, DownloadState.PAUSED,
                ):  # fmt: skip
                    self.services.downloads.resume(event.download_id)
        else:
            self.download(model)

    def download(self, model: GgufModel) -> None:
        """Download ``model``; one that won't fit here is only fetched once confirmed."""
        est = self.shown.estimates.get(model.name)
        if est is not None and est.verdict is FitVerdict.WONT_FIT:
            self._confirm_wont_fit(model, est)
            return
        self._start(model)

    def _confirm_wont_fit(self, model: GgufModel, est: FitEstimate) -> None:
        if self.confirm_box is not None:
            self.confirm_box.close()
        label = model.quant or model.name

        def answered(yes: bool) -> None:
            self.confirm_box = None
            if yes:
                self._start(model)
            else:
                self.status.say(f"Not downloading {label}.")

        n_ctx = self.shown.ctx_spin.value()
        self.confirm_box = ask_wont_fit(self.parent_widget, label, est, n_ctx, answered)

    def _start(self, model: GgufModel) -> None:
        listing = self.shown.listing
        if listing is None:
            return
        try:
            handles = self.services.downloads.add_model(
                listing.repo_id, model, revision=listing.commit or "main",
                projector=listing.projector_for(model),
            )  # fmt: skip
        except Exception as exc:
            self.status.say(error_text(exc), error=True)
            return
        est = self.shown.estimates.get(model.name)
        warn = (
            " Note: it won't fit in memory here."
            if est and est.verdict is FitVerdict.WONT_FIT
            else ""
        )
        label = model.quant or model.name
        self._downloading, self._warn = label, warn
        self.status.say(f"Downloading {label}; progress shows on its button and in "
                        f"Downloads.{warn}")  # fmt: skip
        for handle in handles:
            self.on_event(handle.snapshot())
            self.download_started.emit(handle.filename)
