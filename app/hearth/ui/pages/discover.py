"""The Discover page: search GGUF models on the Hub, then a model page per repo.

The model page lists every quantization (file, quant, size), a fit badge per row and a
Download button; one that won't fit here asks first. The fit check reads one file's
header with a ranged GET (``remote_metadata``) and scales it to every row
(``rank_quantizations``). All Hub calls run in threads (``asyncio.to_thread``) from
tasks on the qasync loop.
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QColor, QDesktopServices
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QSpinBox,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from hearth.core.errors import HearthError
from hearth.core.units import format_bytes
from hearth.hardware.fit import (
    ContextPlan,
    FitEstimate,
    FitVerdict,
    QuantCandidate,
    rank_quantizations,
)
from hearth.hub import GgufModel, ModelSearch, ModelSummary, RepoListing, list_repo_gguf
from hearth.hub.client import hub_endpoint
from hearth.hub.header import remote_metadata
from hearth.ui.empty_state import CardSpec, EmptyState
from hearth.ui.pages.common import button, button_cell, plural
from hearth.ui.pages.fit_confirm import ask_wont_fit
from hearth.ui.pages.services import AppServices
from hearth.ui.tasks import TaskSet

log = logging.getLogger(__name__)

SORTS = [("Most downloaded", "downloads"), ("Most liked", "likes"), ("Recently updated",
         "last_modified")]  # fmt: skip
FIT_COLORS = {
    FitVerdict.FULL_GPU: "#1e7b34",
    FitVerdict.PARTIAL_GPU: "#8a6d00",
    FitVerdict.CPU_ONLY: "#1a5fb4",
    FitVerdict.WONT_FIT: "#b3261e",
}
COL_FILE, COL_QUANT, COL_SIZE, COL_FIT, COL_ACTION = range(5)


def _message(exc: BaseException) -> str:
    return exc.message if isinstance(exc, HearthError) else f"Something went wrong: {exc}"


class ModelPage(QWidget):
    """One repo: its quantizations with size, fit and a Download button each."""

    back_requested = Signal()
    download_started = Signal(str)  # the file name

    def __init__(self, services: AppServices, tasks: TaskSet, parent: QWidget | None = None):
        super().__init__(parent)
        self.services = services
        self._tasks = tasks
        self.repo_id = ""
        self.listing: RepoListing | None = None
        self.estimates: dict[str, FitEstimate] = {}
        self._task: asyncio.Task[None] | None = None
        self.confirm_box: QWidget | None = None  # the open "won't fit" question
        self.back_button = button(
            "← Results", "Back to the search results", self.back_requested.emit
        )
        self.title = QLabel(self)
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.card_button = button("Model card ↗", "Open the model card", self.open_model_card)
        self.ctx_spin = QSpinBox(self)
        self.ctx_spin.setRange(512, 1_048_576)
        self.ctx_spin.setSingleStep(1024)
        self.ctx_spin.setValue(4096)
        self.ctx_spin.setAccessibleName("Context length for the fit check")
        self.ctx_spin.editingFinished.connect(self.refresh_fit)
        self.status = QLabel(self)
        self.status.setWordWrap(True)
        self.status.setAccessibleName("Model page status")
        self.table = QTableWidget(0, 5, self)
        self.table.setHorizontalHeaderLabels(["File", "Quant", "Size", "Fit", ""])
        self.table.setAccessibleName("Quantizations")
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(COL_FILE, QHeaderView.ResizeMode.Stretch)
        for col in (COL_QUANT, COL_SIZE, COL_FIT, COL_ACTION):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        top = QHBoxLayout()
        top.addWidget(self.back_button)
        top.addWidget(self.title, 1)
        top.addWidget(QLabel("Fit at context:", self))
        top.addWidget(self.ctx_spin)
        top.addWidget(self.card_button)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.status)
        layout.addWidget(self.table, 1)

    # ------------------------------------------------------------------ open
    def model_card_url(self) -> QUrl:
        return QUrl(f"{hub_endpoint()}/{self.repo_id}")

    def open_model_card(self) -> None:
        QDesktopServices.openUrl(self.model_card_url())

    def open(self, repo_id: str) -> asyncio.Task[None]:
        self.repo_id = repo_id
        self.listing = None
        self.estimates = {}
        self.title.setText(f"<h2>{repo_id}</h2>")
        self.status.setText("Listing the files…")
        self.table.setRowCount(0)
        return self._restart(self._load(repo_id))

    def _restart(self, coro: object) -> asyncio.Task[None]:
        if self._task is not None:
            self._task.cancel()
        self._task = self._tasks.spawn(coro, name="model-page")  # type: ignore[arg-type]
        return self._task

    async def _load(self, repo_id: str) -> None:
        try:
            listing = await asyncio.to_thread(list_repo_gguf, repo_id)
        except Exception as exc:
            self.status.setText(_message(exc))
            return
        self.listing = listing
        self._fill(listing)
        if not listing.models:
            self.status.setText(f"{repo_id} has no GGUF files.")
            return
        await self._fit(listing)

    def _fill(self, listing: RepoListing) -> None:
        self.table.setRowCount(len(listing.models))
        for row, model in enumerate(listing.models):
            name = model.files[0].path if len(model.files) == 1 else f"{model.name} (split)"
            self.table.setItem(row, COL_FILE, QTableWidgetItem(name))
            self.table.setItem(row, COL_QUANT, QTableWidgetItem(model.quant or "?"))
            size = QTableWidgetItem(format_bytes(model.total_size))
            size.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.table.setItem(row, COL_SIZE, size)
            self.table.setItem(row, COL_FIT, QTableWidgetItem("checking…"))
            label = model.quant or model.name
            btn = button("Download", f"Download {label}", partial(self.download, model))
            btn.setEnabled(model.complete)
            if not model.complete:
                btn.setToolTip("Some parts of this split model are missing on the Hub.")
            self.table.setCellWidget(row, COL_ACTION, button_cell(btn))
        note = " This repo is gated: accept its terms on the Hub first." if listing.gated else ""
        self.status.setText(f"{plural(len(listing.models), 'file')}.{note}")

    # ------------------------------------------------------------------ fit
    def refresh_fit(self) -> None:
        if self.listing is not None and self.listing.models:
            self._restart(self._fit(self.listing))

    async def _fit(self, listing: RepoListing) -> None:
        ref = next((m for m in listing.models if m.complete), listing.models[0])
        first = ref.files[0]
        plan = ContextPlan(n_ctx=self.ctx_spin.value())
        try:
            meta = await asyncio.to_thread(
                remote_metadata, listing.repo_id, first.path,
                revision=listing.commit or "main", size=first.size,
            )  # fmt: skip
            system = await self.services.system()
        except Exception as exc:
            for row in range(self.table.rowCount()):
                self.table.setItem(row, COL_FIT, QTableWidgetItem("unknown"))
            self.status.setText(f"Could not check the fit: {_message(exc)}")
            return
        candidates = [
            QuantCandidate(m.quant or m.name, m.total_size or 0, m.name)
            for m in listing.models
            if m.total_size
        ]
        ranked = await asyncio.to_thread(rank_quantizations, meta, candidates, plan, system)
        self.estimates = {c.name or c.label: est for c, est in ranked}
        for row, model in enumerate(listing.models):
            est = self.estimates.get(model.name)
            item = QTableWidgetItem(est.verdict.value if est else "unknown")
            if est is not None:
                item.setForeground(QColor(FIT_COLORS[est.verdict]))
                item.setToolTip(est.summary)
            self.table.setItem(row, COL_FIT, item)

    def fit_texts(self) -> list[str]:
        return [
            (item.text() if (item := self.table.item(r, COL_FIT)) else "")
            for r in range(self.table.rowCount())
        ]

    # ------------------------------------------------------------------ download
    def download(self, model: GgufModel) -> None:
        """Download ``model``; one that won't fit here is only fetched once confirmed."""
        est = self.estimates.get(model.name)
        if est is not None and est.verdict is FitVerdict.WONT_FIT:
            self._confirm_wont_fit(model, est)
            return
        self._start_download(model)

    def _confirm_wont_fit(self, model: GgufModel, est: FitEstimate) -> None:
        if self.confirm_box is not None:
            self.confirm_box.close()
        label = model.quant or model.name

        def answered(yes: bool) -> None:
            self.confirm_box = None
            if yes:
                self._start_download(model)
            else:
                self.status.setText(f"Not downloading {label}.")

        self.confirm_box = ask_wont_fit(self, label, est, self.ctx_spin.value(), answered)

    def _start_download(self, model: GgufModel) -> None:
        listing = self.listing
        if listing is None:
            return
        try:
            handles = self.services.downloads.add_model(
                listing.repo_id, model, revision=listing.commit or "main"
            )
        except Exception as exc:
            self.status.setText(_message(exc))
            return
        est = self.estimates.get(model.name)
        warn = (
            " Note: it won't fit in memory here."
            if est and est.verdict is FitVerdict.WONT_FIT
            else ""
        )
        self.status.setText(f"Downloading {model.quant or model.name}: see Downloads.{warn}")
        for handle in handles:
            self.download_started.emit(handle.filename)

    def download_button(self, quant: str) -> QWidget | None:
        if self.listing is None:
            return None
        for row, model in enumerate(self.listing.models):
            if (model.quant or "").upper() == quant.upper():
                return self.table.cellWidget(row, COL_ACTION)
        return None


class DiscoverPage(QWidget):
    download_started = Signal(str)
    recommended_requested = Signal()  # the empty state's "Recommended for this computer"

    def __init__(
        self,
        services: AppServices,
        tasks: TaskSet,
        parent: QWidget | None = None,
        *,
        page_size: int = 30,
    ) -> None:
        super().__init__(parent)
        self.services = services
        self._tasks = tasks
        self.page_size = page_size
        self._search: ModelSearch | None = None
        self._search_task: asyncio.Task[None] | None = None
        self.results: list[ModelSummary] = []

        self.search_box = QLineEdit(self)
        self.search_box.setPlaceholderText("Search GGUF models on Hugging Face…")
        self.search_box.setAccessibleName("Search models")
        self.search_box.returnPressed.connect(self.search)
        self.sort_combo = QComboBox(self)
        self.sort_combo.setAccessibleName("Sort results")
        for label, key in SORTS:
            self.sort_combo.addItem(label, key)
        self.sort_combo.currentIndexChanged.connect(lambda _i: self._resort())
        self.search_button = button("Search", "Search", self.search)
        self.list = QListWidget(self)
        self.list.setAccessibleName("Search results")
        self.list.itemActivated.connect(self._open_item)
        self.list.itemClicked.connect(self._open_item)  # one click opens a repo
        self.more_button = button("Load more", "Load more results", self.load_more)
        self.more_button.hide()
        self.status = QLabel("Search for a model, e.g. “qwen coder” or “llama 3”.", self)
        self.status.setWordWrap(True)
        self.status.setAccessibleName("Search status")

        self.empty_state = EmptyState(
            "discoverEmptyState",
            "Find a model to run on this computer",
            "Search Hugging Face above, or start from a pick.",
            [
                CardSpec(
                    "discoverRecommendedCard",
                    "recommended",
                    "Recommended for this computer",
                    "Chat, coding and small models that fit its memory.",
                    self.recommended_requested.emit,
                ),
                CardSpec(
                    "discoverCodingCard",
                    "search",
                    "Coding models",
                    "Models tuned for code, for IDE plugins and the endpoint.",
                    lambda: self.search("coder"),
                ),
            ],
            self,
        )
        results = QWidget(self)
        bar = QHBoxLayout()
        bar.addWidget(self.search_box, 1)
        bar.addWidget(self.sort_combo)
        bar.addWidget(self.search_button)
        col = QVBoxLayout(results)
        col.addLayout(bar)
        col.addWidget(self.status)
        col.addWidget(self.empty_state, 1)
        col.addWidget(self.list, 1)
        self.list.hide()  # until the first search: the empty state says what to do
        col.addWidget(self.more_button)

        self.model_page = ModelPage(services, tasks, self)
        self.stack = QStackedWidget(self)
        self.model_page.back_requested.connect(lambda: self.stack.setCurrentIndex(0))
        self.model_page.download_started.connect(self.download_started)
        self.stack.addWidget(results)
        self.stack.addWidget(self.model_page)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.stack)

    # ------------------------------------------------------------------ search
    def _resort(self) -> None:
        if self._search is not None:
            self.search()

    def search(self, query: str | None = None) -> asyncio.Task[None]:
        if query is not None:
            self.search_box.setText(query)
        sort = self.sort_combo.currentData()
        self._search = ModelSearch(self.search_box.text(), sort=sort, page_size=self.page_size)
        self.results = []
        self.list.clear()
        self.empty_state.hide()
        self.list.show()
        self.stack.setCurrentIndex(0)
        return self._fetch(clear=True)

    def load_more(self) -> asyncio.Task[None] | None:
        if self._search is None or not self._search.has_more:
            return None
        return self._fetch(clear=False)

    def _fetch(self, *, clear: bool) -> asyncio.Task[None]:
        if self._search_task is not None and clear:
            self._search_task.cancel()
        self.more_button.setEnabled(False)
        self.status.setText("Searching…")
        search = self._search
        assert search is not None
        self._search_task = self._tasks.spawn(self._next_page(search), name="search")
        return self._search_task

    async def _next_page(self, search: ModelSearch) -> None:
        try:
            page = await asyncio.to_thread(search.next_page)
        except Exception as exc:
            self.status.setText(_message(exc))
            self.more_button.setEnabled(True)
            return
        if search is not self._search:
            return  # a newer search replaced this one
        for summary in page.results:
            self.results.append(summary)
            gated = "  · gated" if summary.gated else ""
            stats = (
                f"{plural(summary.downloads, 'download')} · {plural(summary.likes, 'like')}{gated}"
            )
            text = f"{summary.repo_id}\n{stats}"
            item = QListWidgetItem(text)
            item.setData(Qt.ItemDataRole.UserRole, summary.repo_id)
            self.list.addItem(item)
        n = len(self.results)
        self.status.setText(plural(n, "model") if n else "No GGUF models match.")
        self.more_button.setVisible(page.has_more)
        self.more_button.setEnabled(True)

    # ------------------------------------------------------------------ model page
    def _open_item(self, item: QListWidgetItem) -> None:
        self.open_model(str(item.data(Qt.ItemDataRole.UserRole)))

    def open_model(self, repo_id: str) -> asyncio.Task[None]:
        self.stack.setCurrentWidget(self.model_page)
        return self.model_page.open(repo_id)

    def shown_repos(self) -> list[str]:
        return [
            str(self.list.item(i).data(Qt.ItemDataRole.UserRole)) for i in range(self.list.count())
        ]
