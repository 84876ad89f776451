"""The chat formats are one table, in core: the worker's parsers and the GUI read it.

The GUI side (the Load dialog's chat-format combo, the Library's capability chips)
must name what detection finds without importing the engine, which is the worker's and
loads llama.cpp; the engine must have a parser and kept tokens for every format listed.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from hearth.core.chat_formats import CHAT_FORMATS, SIGNS, ToolFormat, detect_tool_format
from hearth.engine import tool_formats


@pytest.mark.parametrize(
    "module",
    ["hearth.core.chat_formats", "hearth.core.model_traits",
     "hearth.ui.dialogs.chat_format_choice", "hearth.library.capabilities"],
)  # fmt: skip
def test_the_gui_side_reads_formats_without_the_engine(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        "bad = sorted(m for m in sys.modules if m.startswith(('hearth.engine', 'llama_cpp')))\n"
        "print(bad)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    assert done.stdout.strip() == "[]"


def test_every_format_is_detectable_parsed_and_kept() -> None:
    assert tuple(f.value for f in ToolFormat) == CHAT_FORMATS
    assert {s.fmt for s in SIGNS} == set(ToolFormat)
    assert {s.fmt for s in tool_formats.REGISTRY} == set(ToolFormat)
    assert set(tool_formats.PRESERVED) == set(ToolFormat)


def test_gemma4_is_told_from_its_neighbours() -> None:
    """Gemma 4's ``<|tool_call>`` is neither Phi-4's ``<|tool_call|>`` nor Hermes' tag."""
    assert detect_tool_format("{{ '<|tool_call>call:' + name }}") is ToolFormat.GEMMA4
    assert detect_tool_format("{{ '<|tool_call|>' }}") is ToolFormat.PHI4
    assert detect_tool_format("{{ '<tool_call>' }}") is ToolFormat.HERMES
    assert detect_tool_format(None) is ToolFormat.HERMES
