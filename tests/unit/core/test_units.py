"""One way of writing sizes, durations and parameter counts for people."""

from __future__ import annotations

import pytest

from hearth.core.units import GIB, KIB, MIB, format_bytes, format_count, format_duration


@pytest.mark.parametrize(
    ("n", "text"),
    [(0, "0 B"), (512, "512 B"), (1023, "1023 B"), (KIB, "1.0 KiB"), (1536, "1.5 KiB"),
     (2 * MIB, "2.0 MiB"), (GIB // 2, "512.0 MiB"), (int(4.2 * GIB), "4.2 GiB"),
     (3 * 1024 * GIB, "3.0 TiB"), (None, "?")],
)  # fmt: skip
def test_format_bytes(n: int | None, text: str) -> None:
    assert format_bytes(n) == text


def test_format_bytes_never_runs_out_of_units() -> None:
    assert format_bytes(5 * 1024**6) == "5120.0 PiB"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0m00s"), (65, "1m05s"), (3599.9, "59m59s"), (7380, "2h03m"), (-4, "0m00s"),
     (None, "?")],
)  # fmt: skip
def test_format_duration(seconds: float | None, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize(
    ("n", "text"),
    [(135_000_000, "135M"), (7_241_732_096, "7.2B"), (1_500, "1.5K"), (999, "999"),
     (0, "?"), (None, "?")],
)  # fmt: skip
def test_format_count(n: int | None, text: str) -> None:
    assert format_count(n) == text
