"""What the worker held, as the supervisor last knew it, so that a crash loses nothing
the user had loaded: every resident model's file and load settings (its draft model
among them), its memory, and the order of their last use.

Once the worker is dead it can't be asked, so the record is kept up to date while it
lives: a fresh worker's model (``started``), a load beside the others (``loaded``), an
eject (``unloaded``) and every read of the worker's status (``observe``: the worker
alone knows which model a request used last, what it loaded just in time and what it
evicted). The worker does not say with which settings a model was loaded, so those
come from the loads the supervisor made. A model loaded just in time (an IDE naming a
library model, not pinned) is not reloaded: its next request loads it again, as the
first one did, and it keeps its idle expiry (a reload through the admin load would pin
it for good).

``plan`` turns the record into the reloads after a crash: most recently used first (the
one in use is back first), within the count and the memory budget the worker had. The
first starts the fresh worker (``--model``); the rest come back through the admin load,
which takes library models only, so a model the worker was started with from outside
the library (``hearth PATH``) goes first instead (``outside_library_first``).
``Recovery`` is what the app shows of the reloads while they run and once they're done.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from hearth.config.paths import default_paths
from hearth.core.residency import ResidencyLimits
from hearth.library.library import Library
from hearth.supervisor.client import WorkerClient, WorkerError
from hearth.supervisor.launch_options import LoadOptions
from hearth.supervisor.residency_status import ResidencyStatus

log = logging.getLogger(__name__)

OVER_COUNT = "more models than the worker may hold at once"
OVER_BUDGET = "it does not fit in the memory budget beside the models that came back first"
CRASHED_LOADING = "the worker crashed again while loading it"


@dataclass(frozen=True)
class Returning:
    """A model to bring back: its file, its id, how it was loaded, what it held."""

    path: Path
    model_id: str
    options: LoadOptions
    memory_bytes: int = 0
    pinned: bool = True  # loaded by the user; False: just in time, by a request
    started: bool = False  # the worker was started with it (it may be outside the library)


@dataclass(frozen=True)
class Recovery:
    """The reloads after a crash: what is still to come back (in order), what is back,
    and what could not come back, with why. ``done`` once nothing is pending."""

    pending: tuple[str, ...] = ()
    back: tuple[str, ...] = ()
    failed: tuple[tuple[str, str], ...] = ()

    @property
    def done(self) -> bool:
        return not self.pending

    def came_back(self, model_id: str) -> Recovery:
        pending = tuple(m for m in self.pending if m != model_id)
        return replace(self, pending=pending, back=(*self.back, model_id))

    def failed_with(self, model_id: str, reason: str) -> Recovery:
        """``model_id`` could not come back (said once, with the first reason)."""
        pending = tuple(m for m in self.pending if m != model_id)
        if any(name == model_id for name, _why in self.failed):
            return replace(self, pending=pending)
        return replace(self, pending=pending, failed=(*self.failed, (model_id, reason)))


def _key(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path


class ResidentRecord:
    """The worker's resident models, least recently used first, with their settings."""

    def __init__(self) -> None:
        self._residents: list[Returning] = []
        self._options: dict[Path, LoadOptions] = {}  # how each file was last loaded
        self._limits: ResidencyLimits | None = None
        self._started: Path | None = None  # the file the worker was started with

    @property
    def residents(self) -> tuple[Returning, ...]:
        """Least recently used first, as the worker orders them."""
        return tuple(self._residents)

    @property
    def limits(self) -> ResidencyLimits | None:
        return self._limits

    def started(self, path: Path, options: LoadOptions, model_id: str) -> None:
        """A fresh worker holds ``path`` only."""
        self._options[_key(path)] = options
        self._started = _key(path)
        self._residents = [Returning(path, model_id, options, started=True)]

    def restarted_with(self, path: Path) -> None:
        """After a crash, a fresh worker was started with ``path`` (the record keeps
        the other models, still to come back)."""
        self._started = _key(path)

    def loaded(
        self, path: Path, options: LoadOptions, model_id: str, memory_bytes: int, *, alone: bool
    ) -> None:
        """``path`` was loaded beside the others (``alone``: instead of them); it is the
        most recently used now."""
        self._options[_key(path)] = options
        kept = [] if alone else [r for r in self._residents if _key(r.path) != _key(path)]
        started = _key(path) == self._started
        self._residents = [*kept, Returning(path, model_id, options, memory_bytes, True, started)]

    def unloaded(self, model_id: str | None) -> None:
        """The user ejected ``model_id`` (None: every model): it does not come back."""
        self._residents = [r for r in self._residents if model_id not in (None, r.model_id)]

    def forget(self, model_id: str) -> None:
        """A model that failed to come back is not tried again after another crash."""
        self.unloaded(model_id)

    def observe(self, status: ResidencyStatus) -> None:
        """The worker's own account: its models in order of use, and its limits."""
        self._residents = [
            Returning(
                m.info.path,
                m.info.id,
                self._options.get(_key(m.info.path), LoadOptions()),
                m.memory_bytes,
                m.pinned,
                _key(m.info.path) == self._started,
            )
            for m in status.models
        ]
        if status.limits is not None:
            self._limits = status.limits

    def plan(self) -> tuple[list[Returning], list[tuple[Returning, str]]]:
        """The models to bring back, most recently used first, and those left out
        (with why): past the count or the memory budget the worker had. Models loaded
        just in time are neither (see the module's note)."""
        limits = self._limits
        chosen: list[Returning] = []
        left_out: list[tuple[Returning, str]] = []
        used = 0
        for item in reversed(self._residents):
            if not item.pinned:
                log.info("%s was loaded just in time: its next request loads it", item.model_id)
            elif limits is not None and len(chosen) >= limits.max_models:
                left_out.append((item, OVER_COUNT))
            elif (
                limits is not None
                and chosen
                and used + item.memory_bytes > limits.memory_budget_bytes
            ):
                left_out.append((item, OVER_BUDGET))
            else:
                chosen.append(item)
                used += item.memory_bytes
        for item, why in left_out:
            log.warning("not bringing back %s after the crash: %s", item.model_id, why)
        return chosen, left_out


def fit_refusal(status: ResidencyStatus, item: Returning) -> str | None:
    """Why ``item`` can't come back beside the models ``status`` holds (None: it fits):
    the worker's count, or its memory budget (a fresh worker's may be smaller)."""
    limits = status.limits
    if limits is None:
        return None
    if len(status.models) >= limits.max_models:
        return OVER_COUNT
    used = sum(m.memory_bytes for m in status.models)
    if used + item.memory_bytes > limits.memory_budget_bytes:
        return OVER_BUDGET
    return None


def in_library(path: Path) -> bool:
    """Whether ``path`` is a model of the library the worker loads from by name (reads
    the library's folders: call it off the event loop's thread)."""
    return Library(default_paths()).get(str(path)) is not None


def outside_library_first(plan: list[Returning], listed: Callable[[Path], bool]) -> list[Returning]:
    """``plan`` with the model the worker was started with first when it is not in the
    library (``listed`` says): only a fresh worker's ``--model`` can load such a file."""
    started = next((item for item in plan[1:] if item.started), None)
    if started is None or listed(started.path):
        return plan
    log.info("%s is not in the library: it comes back first, as the worker's model",
             started.model_id)  # fmt: skip
    return [started, *(item for item in plan if item is not started)]


async def restore_order(client: WorkerClient, recent_first: list[str]) -> None:
    """Give the worker back its order of use from before the crash. The models came back
    most recent first, so the one in use would look the least recently used: the first
    to evict, and not the one a request without a model name gets. Each is marked used
    (``WorkerClient.touch``), the least recent first."""
    if len(recent_first) < 2:
        return
    try:
        for model_id in reversed(recent_first):
            await client.touch(model_id)
    except WorkerError as exc:
        log.info("could not restore the models' order of use: %s", exc.message)
