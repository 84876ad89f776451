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
one in use is back first), within the count and the memory budget the worker had.
``Recovery`` is what the app shows of the reloads while they run and once they're done.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path

from hearth.core.residency import ResidencyLimits
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
        self._residents = [Returning(path, model_id, options)]

    def loaded(
        self, path: Path, options: LoadOptions, model_id: str, memory_bytes: int, *, alone: bool
    ) -> None:
        """``path`` was loaded beside the others (``alone``: instead of them); it is the
        most recently used now."""
        self._options[_key(path)] = options
        kept = [] if alone else [r for r in self._residents if _key(r.path) != _key(path)]
        self._residents = [*kept, Returning(path, model_id, options, memory_bytes)]

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
            elif limits is not None and chosen and used + item.memory_bytes > (
                limits.memory_budget_bytes
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
