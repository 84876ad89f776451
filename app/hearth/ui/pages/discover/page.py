"""The Discover page: picks first, a Hub search above them, and a model page per repo.

It opens on picks (``discover_picks``: curated models by category plus the Hub's
trending GGUFs when online), each with a fit chip for this machine. Searching replaces
the picks with the Hub's results; "Picks" (or an empty search) brings them back. A
single click on a pick or a result opens the repo's model page (``model_page``):
its files with fit chips, download buttons that follow the download, and the model
card. Hub calls run on worker threads from tasks on the qasync loop.
"""

from __future__ import annotations

import asyncio
import logging

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QIcon, QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLineEdit,
    QListWidgetItem,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from hearth.hub import ModelSearch, ModelSummary
from hearth.ui.app_settings import SettingsStore
from hearth.ui.machine_speed import MachineSpeed
from hearth.ui.pages.common import button, error_text, plural
from hearth.ui.pages.discover.model_page import ModelPage
from hearth.ui.pages.discover.picks import PicksView
from hearth.ui.pages.discover.results import ResultsList
from hearth.ui.pages.services import AppServices
from hearth.ui.style.icons import icon
from hearth.ui.style.theme_hook import ThemeHook
from hearth.ui.style.tokens import SPACE
from hearth.ui.tasks import TaskSet
from hearth.ui.widgets.page_style import PageHeader, StatusLabel, page_layout

log = logging.getLogger(__name__)

__all__ = ["DiscoverPage", "ModelPage"]

SORTS = [("Most downloaded", "downloads"), ("Most liked", "likes"), ("Recently updated",
         "last_modified")]  # fmt: skip
PICKS_HINT = "Picks for this computer. One click opens a model; or search Hugging Face above."
RESULTS_HINT = "One click opens a model."
NO_MATCH = "No GGUF models match \u201c{query}\u201d. Try fewer words, or go back to the picks."


class DiscoverPage(QWidget):
    download_started = Signal(str)
    load_requested = Signal(object)  # Path of a downloaded model, for the Load dialog
    recommended_requested = Signal()  # "What fits this computer?"

    def __init__(
        self,
        services: AppServices,
        tasks: TaskSet,
        parent: QWidget | None = None,
        *,
        page_size: int = 30,
        store: SettingsStore | None = None,
        speed: MachineSpeed | None = None,
    ) -> None:
        """``store`` keeps the measured memory bandwidth across runs; ``speed`` fixes
        it (tests)."""
        super().__init__(parent)
        self.services = services
        self._tasks = tasks
        self.page_size = page_size
        self.speed = speed or MachineSpeed(store)
        self._search: ModelSearch | None = None
        self._search_task: asyncio.Task[None] | None = None
        self.picks_task: asyncio.Task[None] | None = None  # the chips, for this machine
        self.trending_task: asyncio.Task[int] | None = None  # the Hub's trending, online
        self.results: list[ModelSummary] = []

        self.search_box = QLineEdit(self)
        self.search_box.setPlaceholderText("Search GGUF models on Hugging Face…")
        self.search_box.setAccessibleName("Search models")
        self.search_box.setClearButtonEnabled(True)
        self.search_box.returnPressed.connect(self.search)
        self._search_icon = self.search_box.addAction(
            QIcon(), QLineEdit.ActionPosition.LeadingPosition
        )
        self._search_hook = ThemeHook(
            self.search_box,
            lambda t: self._search_icon.setIcon(icon("search", t, color=t.text_muted)),
        )
        self.sort_combo = QComboBox(self)
        self.sort_combo.setAccessibleName("Sort results")
        for label, key in SORTS:
            self.sort_combo.addItem(label, key)
        self.sort_combo.currentIndexChanged.connect(lambda _i: self._resort())
        self.search_button = button("Search", "Search", self.search)
        self.picks_button = button("← Picks", "Back to the picks", self.show_picks)
        self.list = ResultsList(self)
        self.list.setToolTip("One click opens a model")
        self.list.itemActivated.connect(self._open_item)  # Enter
        self.list.itemClicked.connect(self._open_item)  # one click opens a repo
        self.more_button = button("Load more", "Load more results", self.load_more)
        self.more_button.hide()
        self.status = StatusLabel(self, accessible="Search status")
        self.status.say(PICKS_HINT)
        self.picks = PicksView(self)
        self.picks.repo_chosen.connect(self.open_model)
        self.picks.recommended_requested.connect(self.recommended_requested)

        results = QWidget(self)
        self.header = PageHeader("Discover", results)
        bar = QHBoxLayout()
        bar.setSpacing(SPACE["s"])
        bar.addWidget(self.picks_button)
        bar.addWidget(self.search_box, 1)
        bar.addWidget(self.sort_combo)
        bar.addWidget(self.search_button)
        col = page_layout(results)
        col.addWidget(self.header)
        col.addLayout(bar)
        col.addWidget(self.status)
        col.addWidget(self.picks, 1)
        col.addWidget(self.list, 1)
        more = QHBoxLayout()
        more.addStretch(1)
        more.addWidget(self.more_button)
        more.addStretch(1)
        col.addLayout(more)
        col.addStretch(0)  # under a short list of hits
        self.list.hide()  # until the first search: the picks show
        self.picks_button.hide()

        self.model_page = ModelPage(services, tasks, self.speed, self)
        self.stack = QStackedWidget(self)
        self.model_page.back_requested.connect(lambda: self.stack.setCurrentIndex(0))
        self.model_page.download_started.connect(self.download_started)
        self.model_page.load_requested.connect(self.load_requested)
        self.stack.addWidget(results)
        self.stack.addWidget(self.model_page)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.stack)

    # ------------------------------------------------------------------ picks
    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if self.picks_task is None and not self.services.closed:
            self.picks_task = self._tasks.spawn(self.fill_picks(), name="discover-picks")
            self.trending_task = self._tasks.spawn(
                self.picks.add_trending(), name="discover-trending"
            )

    async def fill_picks(self) -> None:
        """Colour the picks' chips for this machine (trending ones are coloured as
        they arrive, from the same measurement)."""
        try:
            system = await self.services.system()
            bandwidth = await self.speed.bandwidth(system)
        except Exception:
            log.exception("could not judge the picks for this machine")
        else:
            self.picks.judge_all(system, bandwidth)

    def show_picks(self) -> None:
        self._search = None
        if self._search_task is not None:
            self._search_task.cancel()
        self.search_box.clear()
        self.list.hide()
        self.more_button.hide()
        self.picks_button.hide()
        self.picks.show()
        self.status.say(PICKS_HINT)
        self.stack.setCurrentIndex(0)

    # ------------------------------------------------------------------ search
    def _resort(self) -> None:
        if self._search is not None:
            self.search()

    def search(self, query: str | None = None) -> asyncio.Task[None] | None:
        if query is not None:
            self.search_box.setText(query)
        if not self.search_box.text().strip():
            self.show_picks()
            return None
        sort = self.sort_combo.currentData()
        self._search = ModelSearch(self.search_box.text(), sort=sort, page_size=self.page_size)
        self.results = []
        self.list.clear()
        self.picks.hide()
        self.list.hide()  # until hits arrive: "Searching…" says what is happening
        self.picks_button.show()
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
        self.more_button.setText("Loading…")
        self.status.say(f"Searching Hugging Face for \u201c{self.search_box.text().strip()}\u201d…")
        search = self._search
        assert search is not None
        self._search_task = self._tasks.spawn(self._next_page(search), name="search")
        return self._search_task

    async def _next_page(self, search: ModelSearch) -> None:
        try:
            page = await asyncio.to_thread(search.next_page)
        except Exception as exc:
            if search is self._search:
                self.status.say(error_text(exc), error=True)
                self.more_button.setEnabled(True)
                self.more_button.setText("Load more")
            return
        if search is not self._search:
            return  # a newer search replaced this one
        for summary in page.results:
            self.results.append(summary)
            self.list.add_summary(summary)
        n = len(self.results)
        self.list.setVisible(n > 0)  # no hits: the line says so, without an empty box
        more = " or more" if page.has_more else ""
        self.status.say(f"{plural(n, 'model')}{more}. {RESULTS_HINT}" if n else
                        NO_MATCH.format(query=search.query))  # fmt: skip
        self.more_button.setVisible(page.has_more)
        self.more_button.setEnabled(True)
        self.more_button.setText("Load more")

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
