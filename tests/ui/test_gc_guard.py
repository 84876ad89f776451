"""The GUI's collector (ui/gc_guard.py) frees old cyclic garbage, not only young."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest
from PySide6.QtWidgets import QApplication

from hearth.ui.gc_guard import GcOnGuiThread, generation_due

pytestmark = pytest.mark.ui


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture
def small_thresholds() -> Iterator[None]:
    saved = gc.get_threshold()
    gc.set_threshold(50, 2, 2)
    try:
        yield
    finally:
        gc.set_threshold(*saved)


def test_generation_due_picks_the_oldest_generation_over_its_threshold() -> None:
    assert generation_due((10, 0, 0), (700, 10, 10)) is None
    assert generation_due((701, 3, 0), (700, 10, 10)) == 0
    assert generation_due((701, 11, 0), (700, 10, 10)) == 1
    assert generation_due((701, 11, 11), (700, 10, 10)) == 2
    assert generation_due((701, 0, 11), (700, 10, 10)) == 2
    assert generation_due((10, 11, 11), (700, 10, 10)) is None  # young not due: wait
    assert generation_due((701, 11, 11), (0, 10, 10)) is None  # threshold 0: disabled


def test_an_old_cycle_is_freed_by_the_timer_ticks(
    qapp: QApplication, small_thresholds: None
) -> None:
    guard = GcOnGuiThread(qapp, interval_ms=3_600_000)  # ticks are driven by hand here
    keep: list[object] = []
    try:
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        alive = weakref.ref(a)

        def tick() -> int | None:
            keep.append([[] for _ in range(80)])  # allocations, as a running app makes
            return guard.collect()

        for _ in range(40):  # the cycle survives collections while referenced: it ages
            tick()
        assert guard.collections[2] > 0, guard.collections
        del a, b  # now it is old cyclic garbage
        assert alive() is not None
        for _ in range(40):
            if alive() is None:
                break
            tick()
        assert alive() is None, f"never freed; collections per generation: {guard.collections}"
        assert guard.collections[0] > guard.collections[1] > 0  # young ones run most often
    finally:
        guard.stop()
        gc.disable()  # the UI conftest keeps collection off during tests
        keep.clear()
