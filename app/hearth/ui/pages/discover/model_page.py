"""Discover's model page: one repo's quantizations, their fit, and its model card.

Each row (``quant_table.QuantTable``) is a file (quant, size), a coloured fit chip
with the speed estimate for this machine, and a button that follows the file's
download: "Download", "Downloading 34%", "Retry" after a failure, and "Load" once the
verified file is on disk (Load opens the Load dialog through ``load_requested``). A
row that won't fit asks before downloading. The fit check reads one file's header
with a ranged GET (``remote_metadata``) and scales it to every row
(``rank_quantizations``); the row ``suggest_quantization`` picks, as ``hearth pull``
does, is marked as the best fit here. The README is shown beside the table (``ui.model_card``).
Hub calls run on worker threads. What the rows' buttons do, and the downloads they
follow, is ``repo_downloads.RepoDownloads``'s.
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QResizeEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QWidget,
)

from hearth.hardware.fit import ContextPlan, FitEstimate, FitVerdict
from hearth.hardware.quant_choice import QuantCandidate, rank_quantizations, suggest_quantization
from hearth.hardware.speed import active_fraction
from hearth.hub import RepoListing, list_repo_gguf
from hearth.hub.client import hub_endpoint
from hearth.hub.header import remote_metadata
from hearth.hub.readme import fetch_readme
from hearth.ui.machine_speed import MachineSpeed
from hearth.ui.pages.common import button, error_text, plural
from hearth.ui.pages.discover.model_card import ModelCard
from hearth.ui.pages.discover.model_panes import SIDE_BY_SIDE_WIDTH, ModelPanes
from hearth.ui.pages.discover.quant_table import QuantTable
from hearth.ui.pages.discover.repo_downloads import RepoDownloads
from hearth.ui.pages.services import AppServices
from hearth.ui.style.tokens import SPACE
from hearth.ui.tasks import TaskSet
from hearth.ui.threads import in_thread
from hearth.ui.widgets.fit_chip import FitChip
from hearth.ui.widgets.page_style import StatusLabel, page_layout
from hearth.ui.widgets.vision_chip import VisionChip

log = logging.getLogger(__name__)
__all__ = ["SIDE_BY_SIDE_WIDTH", "ModelPage"]  # the breakpoint, for tests and callers

FIT_HINT = "Fit and speed are estimates for this computer; hover a chip for the details."
GATED_NOTE = (
    " This repo is gated: accept its terms on the Hub, and add your token in "
    "Settings > Hugging Face account."
)


class ModelPage(QWidget):
    """One repo: its quantizations with size, fit and a download button each."""

    back_requested = Signal()
    download_started = Signal(str)  # the file name
    load_requested = Signal(object)  # Path of a downloaded model's first file

    def __init__(
        self,
        services: AppServices,
        tasks: TaskSet,
        speed: MachineSpeed,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.services = services
        self._tasks = tasks
        self.speed = speed
        self.repo_id = ""
        self.listing: RepoListing | None = None
        self.estimates: dict[str, FitEstimate] = {}
        self.suggested: str | None = None  # the model name the fit check suggests
        self._fitted_ctx = 0  # the context the chips were judged at
        self._task: asyncio.Task[None] | None = None
        self._card_task: asyncio.Task[None] | None = None
        self.back_button = button("← Back", "Back to the list", self.back_requested.emit)
        self.title = QLabel(self)
        self.title.setProperty("role", "title")
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # A long repo name is elided (full name in the tooltip) rather than widening
        # the page, and with it the window, past a small screen.
        self.title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.card_button = button("Open on Hugging Face ↗", "Open the model card on the Hub",
                                  self.open_model_card)  # fmt: skip
        self.ctx_spin = QSpinBox(self)
        self.ctx_spin.setRange(512, 1_048_576)
        self.ctx_spin.setSingleStep(1024)
        self.ctx_spin.setValue(4096)
        self.ctx_spin.setSuffix(" tokens")
        self.ctx_spin.setAccessibleName("Context length for the fit check")
        self.ctx_spin.editingFinished.connect(self.refresh_fit)
        self.status = StatusLabel(self, accessible="Model page status")
        self.table = QuantTable(self)
        self.model_card = ModelCard(self)
        ctx_label = QLabel("Fit at context", self)
        ctx_label.setProperty("role", "muted")
        ctx_label.setBuddy(self.ctx_spin)
        top = QHBoxLayout()
        top.setSpacing(SPACE["s"])
        top.addWidget(self.back_button)
        top.addSpacing(SPACE["xs"])
        top.addWidget(self.title, 1)
        self.vision_chip = VisionChip(self)  # the repo has a projector (mmproj)
        top.addWidget(self.vision_chip)
        top.addWidget(ctx_label)
        top.addWidget(self.ctx_spin)
        top.addSpacing(SPACE["xs"])
        top.addWidget(self.card_button)
        self.split = ModelPanes(self.table, self.model_card, self)
        layout = page_layout(self)
        layout.addLayout(top)
        layout.addWidget(self.status)
        layout.addWidget(self.split, 1)
        layout.addStretch(0)  # with the split hidden (an error), the line stays on top
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # opened, the page holds focus
        self.downloads = RepoDownloads(services, self, self.table, self.status, self)
        self.downloads.download_started.connect(self.download_started)
        self.downloads.load_requested.connect(self.load_requested)

    @property
    def buttons(self) -> dict[str, QPushButton]:
        """Model name -> its row's button."""
        return self.table.buttons

    # ------------------------------------------------------------------ layout
    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self.split.follow_width(self.width())
        self._elide_title()

    def _elide_title(self) -> None:
        room = max(0, self.title.width())
        text = self.title.fontMetrics().elidedText(self.repo_id, Qt.TextElideMode.ElideMiddle, room)
        self.title.setText(text)

    # ------------------------------------------------------------------ open
    def model_card_url(self) -> QUrl:
        return QUrl(f"{hub_endpoint()}/{self.repo_id}")

    def open_model_card(self) -> None:
        QDesktopServices.openUrl(self.model_card_url())

    def open(self, repo_id: str) -> asyncio.Task[None]:
        self.repo_id = repo_id
        self.listing = None
        self.estimates = {}
        self.downloads.reset()
        self.title.setToolTip(repo_id)
        self.vision_chip.hide()
        self._elide_title()
        self.status.say("Listing the GGUF files of this repo…")
        self.table.reset()
        self.table.hide()  # until there are rows: the status line says it is listing
        self.split.show()
        self.setFocus()  # not the context box: a focused, selected number looks edited
        self.model_card.show_message("Reading the model card…")
        if self._card_task is not None:
            self._card_task.cancel()
        self._card_task = self._tasks.spawn(self._load_card(repo_id), name="model-card")
        return self._restart(self._load(repo_id))

    def _restart(self, coro: object) -> asyncio.Task[None]:
        if self._task is not None:
            self._task.cancel()
        self._task = self._tasks.spawn(coro, name="model-page")  # type: ignore[arg-type]
        return self._task

    async def _load_card(self, repo_id: str) -> None:
        try:
            text = await in_thread(fetch_readme, repo_id)
        except Exception as exc:
            if repo_id == self.repo_id:  # not a repo opened since
                self.model_card.show_message(f"Could not read the model card: {error_text(exc)}")
            return
        if repo_id != self.repo_id:
            return
        if text and text.strip():
            self.model_card.show_markdown(text)
        else:
            self.model_card.show_message("This repo has no model card.")

    async def _load(self, repo_id: str) -> None:
        try:
            listing = await in_thread(list_repo_gguf, repo_id)
        except Exception as exc:
            self.status.say(error_text(exc), error=True)
            self.split.hide()  # nothing to show but the reason (and Back)
            return
        self.listing = listing
        self._fill(listing)
        if not listing.models:
            self.status.say(f"{repo_id} has no GGUF files: nothing here runs in Hearth.")
            return
        await self.downloads.mark_downloaded(listing)
        await self._fit(listing)

    def _fill(self, listing: RepoListing) -> None:
        self.vision_chip.setVisible(listing.vision)
        self.table.fill(listing.models, self.downloads.clicked)
        self.table.setVisible(bool(listing.models))
        self.split.share()
        note = GATED_NOTE if listing.gated else ""
        count = plural(len(listing.models), "file")
        self.status.say(f"{count}. {FIT_HINT}{note}", error=bool(note))

    # ------------------------------------------------------------------ fit
    def refresh_fit(self) -> None:
        """The context changed: judge again (focus leaving the box unchanged does not)."""
        if self.ctx_spin.value() == self._fitted_ctx:
            return
        if self.listing is not None and self.listing.models:
            self._restart(self._fit(self.listing))

    def chip(self, row: int) -> FitChip | None:
        return self.table.chip(row)

    async def _fit(self, listing: RepoListing) -> None:
        ref = next((m for m in listing.models if m.complete), listing.models[0])
        first = ref.files[0]
        plan = ContextPlan(n_ctx=self.ctx_spin.value())
        self._fitted_ctx = plan.n_ctx
        try:
            meta = await in_thread(
                partial(remote_metadata, listing.repo_id, first.path,
                        revision=listing.commit or "main", size=first.size)
            )  # fmt: skip
            system = await self.services.system()
            bandwidth = await self.speed.bandwidth(system)
        except Exception as exc:
            self.table.set_fit_unknown()
            self.status.say(f"Could not check the fit: {error_text(exc)}", error=True)
            return
        candidates = [
            QuantCandidate(m.quant or m.name, m.total_size or 0, m.name)
            for m in listing.models
            if m.total_size
        ]
        best = await in_thread(suggest_quantization, meta, candidates, plan, system)
        ranked = best.ranked if best is not None else await in_thread(
            rank_quantizations, meta, candidates, plan, system
        )  # fmt: skip
        self.estimates = {c.name or c.label: est for c, est in ranked}
        self.table.show_fit(self.estimates, bandwidth, active_fraction(meta))
        self.suggested = best.candidate.name if best is not None else None
        self.table.mark_suggested(self.suggested)
        if best is not None and self.downloads.downloading is None:
            gpu = best.estimate.verdict is FitVerdict.FULL_GPU
            why = "runs fully on the GPU" if gpu else "fits in this computer's memory"
            self.status.say(f"{best.candidate.label} is the best fit here: the largest file "
                            f"that {why}, starred. {FIT_HINT}")  # fmt: skip

    def fit_texts(self) -> list[str]:
        """The verdict of each row ("full GPU offload", "won't fit"...; "" unknown)."""
        if self.listing is None:
            return []
        return [
            est.verdict.value if (est := self.estimates.get(m.name)) else ""
            for m in self.listing.models
        ]

    # ------------------------------------------------------------------ buttons
    def button_text(self, quant: str) -> str:
        btn = self.table.button_for(quant)
        return btn.text() if btn is not None else ""

    def download_button(self, quant: str) -> QWidget | None:
        """The cell holding the button of the row for ``quant`` (tests)."""
        return self.table.action_cell(quant)
