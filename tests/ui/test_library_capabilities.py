"""The Library shows what each model can do as chips on its row, read from its header
before any load: tools (with the family's call format), reasoning, fill-in-middle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

import gguf_factory
from hearth.ui.pages.library.page import LibraryPage
from hearth.ui.pages.services import AppServices
from hearth.ui.tasks import TaskSet

pytestmark = pytest.mark.ui


def test_rows_show_capability_chips(
    qtbot: QtBot, arun: Any, tmp_path: Path, llama_cpp_templates: Path
) -> None:  # fmt: skip
    gemma = (llama_cpp_templates / "google-gemma-4-31B-it.jinja").read_text(encoding="utf-8")
    thinker = gguf_factory.write_tiny_llama(tmp_path / "gemma-like.gguf", chat_template=gemma)
    plain = gguf_factory.write_tiny_llama(tmp_path / "plain.gguf")
    page = LibraryPage(AppServices(), TaskSet(), discover=list)
    qtbot.addWidget(page)
    page.resize(1200, 500)
    page.show()

    async def scenario() -> None:
        await page.import_file(thinker)
        await page.import_file(plain)
        rows = {m.path.name: i for i, m in enumerate(page.models)}
        assert set(rows) == {"gemma-like.gguf", "plain.gguf"}
        chips = page.capability_chips(rows["gemma-like.gguf"])
        assert chips is not None
        assert chips.labels() == ["Tools", "Fill-in-middle", "Reasoning"]
        tools = chips.chips[0]
        assert "gemma4 format" in tools.toolTip() and tools.isVisible()
        assert tools.accessibleName() == "Tools"
        other = page.capability_chips(rows["plain.gguf"])
        assert other is not None and other.labels() == ["Fill-in-middle"]

    arun(scenario())


def test_chip_text_reads_on_its_fill_in_both_themes() -> None:
    from hearth.ui.style.tokens import DARK, LIGHT, contrast_ratio

    for t in (LIGHT, DARK):
        assert contrast_ratio(t.text, t.surface_alt) >= 4.5, t.name
