"""The models loaded in this worker at once: one engine each, under a count and a budget.

Each :class:`Resident` is one loaded model with its own :class:`Engine` (its scheduler
and relay threads, its slots and its prompt cache), its idle clock and what it costs in
memory. :class:`Residency` holds them by model id and answers the one question a load
asks: which idle models must go, least recently used first, so that the new one fits
the count (``--max-models``) and the memory budget (``--memory-budget``). Only models
loaded just in time are ever chosen: a model with requests running never is (when busy
models stand in the way, the answer is "wait", which ``server/load_queue.py`` bounds),
nor a pinned one, the user's (when pinned models stand in the way, the load is refused
at once, naming them: ``held_by_pinned``).

It performs nothing: the model manager loads and unloads, on the event loop, under its
lifecycle lock. Every method runs on the event loop, so a check and the change it
decides happen with no other coroutine between them.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from hearth.core.model_info import LoadConfig, ModelInfo
from hearth.core.residency import LoadedModel, ResidencyLimits
from hearth.engine.engine import Engine
from hearth.server.catalog import model_matches
from hearth.server.idle_unload import IdleClock


@dataclass(eq=False)
class Resident:
    """One loaded model. ``pinned``: loaded by the user (``--model``, the admin load, the
    app's Load), so only an eject, its TTL, or a load with ``replace`` unloads it."""

    engine: Engine
    config: LoadConfig
    info: ModelInfo
    pinned: bool
    clock: IdleClock
    estimate_bytes: int
    measured_bytes: int | None = None
    loaded_at: float = field(default_factory=time.time)

    @property
    def memory_bytes(self) -> int:
        """What the budget counts: the larger of the estimate and the measured growth
        (a model's weights paged in lazily by mmap show little growth at first)."""
        return max(self.estimate_bytes, self.measured_bytes or 0)

    @property
    def busy_slots(self) -> int:
        status = self.engine.status()
        return sum(1 for s in status.slots if s.busy) if status is not None else 0

    @property
    def busy(self) -> bool:
        """Requests run on it (a handler still at work, a busy slot, a queued job), or one
        is on its way to its scheduler: it must not be unloaded now."""
        if self.clock.in_use_count or self.engine.arriving:
            return True
        status = self.engine.status()
        return status is not None and (
            any(s.busy for s in status.slots) or status.queue_depth > 0
        )

    def expires_at(self) -> float | None:
        """Epoch seconds of its idle unload if nothing uses it; None: kept."""
        left = self.clock.expires_in(True)
        return None if left is None else time.time() + left

    def describe(self) -> LoadedModel:
        return LoadedModel(
            info=self.info,
            memory_bytes=self.memory_bytes,
            busy_slots=self.busy_slots,
            pinned=self.pinned,
            expires_at=self.expires_at(),
        )


class Residency:
    """The set of residents by model id, and the choice of what to evict."""

    def __init__(self, limits: ResidencyLimits) -> None:
        self.limits = limits
        self._residents: dict[str, Resident] = {}

    def __len__(self) -> int:
        return len(self._residents)

    def __iter__(self) -> Iterator[Resident]:
        """Least recently used first."""
        return iter(sorted(self._residents.values(), key=lambda r: r.clock.last_used))

    def find(self, requested: str | None) -> Resident | None:
        """The resident serving ``requested`` (any name ``model_matches``); without a
        name, the most recently used one."""
        if not requested:
            return max(self._residents.values(), key=lambda r: r.clock.last_used, default=None)
        resident = self._residents.get(requested.removesuffix(":latest"))
        if resident is not None:
            return resident
        return next((r for r in self._residents.values() if model_matches(r.info, requested)),
                    None)  # fmt: skip

    def add(self, resident: Resident) -> None:
        self._residents[resident.info.id] = resident

    def remove(self, resident: Resident) -> None:
        if self._residents.get(resident.info.id) is resident:
            del self._residents[resident.info.id]

    @property
    def used_bytes(self) -> int:
        return sum(r.memory_bytes for r in self._residents.values())

    def victims(self, need_bytes: int, *, keep: Resident | None = None) -> list[Resident] | None:
        """The idle just-in-time models to unload, least recently used first, so that
        one more model of ``need_bytes`` fits; [] when it fits as is; None when it
        doesn't (busy models hold what it needs: wait, then ask again; or pinned models
        do: see :meth:`held_by_pinned`).

        A pinned model is never chosen: the user loaded it, so only an eject, its TTL
        or a load with ``replace`` unloads it (as LM Studio's just-in-time eviction
        unloads only models loaded just in time). A model bigger than the whole budget
        is still let in once nothing else is loaded: the estimate may be pessimistic,
        and llama.cpp says if it can't."""
        others = [r for r in self if r is not keep]
        evictable = [r for r in others if not r.pinned and not r.busy]
        return self._first_fit(others, evictable, need_bytes)

    def held_by_pinned(self, need_bytes: int, *, keep: Resident | None = None) -> list[Resident]:
        """The pinned models, when they alone keep one more model of ``need_bytes``
        out: it wouldn't fit even with every just-in-time model gone, busy or not, so
        waiting can't help (refuse, naming them). [] when a wait may."""
        others = [r for r in self if r is not keep]
        if self._first_fit(others, [r for r in others if not r.pinned], need_bytes) is not None:
            return []
        return [r for r in others if r.pinned]

    def _first_fit(
        self, others: list[Resident], order: list[Resident], need_bytes: int
    ) -> list[Resident] | None:
        """The shortest run of ``order`` whose unloading lets ``need_bytes`` in beside
        ``others``, under both limits; None when all of it is not enough."""
        count, used = len(others), sum(r.memory_bytes for r in others)
        chosen: list[Resident] = []
        for candidate in [None, *order]:
            if candidate is not None:
                chosen.append(candidate)
                count -= 1
                used -= candidate.memory_bytes
            fits_memory = used + need_bytes <= self.limits.memory_budget_bytes or count == 0
            if count + 1 <= self.limits.max_models and fits_memory:
                return chosen
        return None

    def blockers(self, *, keep: Resident | None = None) -> list[Resident]:
        """The busy models a waiting load waits for (named in its log line)."""
        return [r for r in self if r is not keep and r.busy]

    def describe(self) -> list[LoadedModel]:
        """Every loaded model, least recently used first."""
        return [r.describe() for r in self]


@contextlib.contextmanager
def using(resident: Resident, request_id: str | None) -> Iterator[None]:
    """Count a request on ``resident`` for as long as its handler runs: it is busy (never
    evicted or expired), and its scheduler knows the request is on its way."""
    arriving = (
        resident.engine.incoming(request_id) if request_id else contextlib.nullcontext()
    )
    with resident.clock.in_use(), arriving:
        yield
