"""Incremental markdown rendering: any chunking renders exactly like all at once."""

from __future__ import annotations

import random

import pytest
from PySide6.QtGui import QTextCursor, QTextDocument
from PySide6.QtWidgets import QApplication

from hearth.ui.chat.code_highlight import PYTHON, highlight_line, language
from hearth.ui.chat.md_blocks import (
    MAX_TEXT_BLOCK_CHARS,
    BlockSplitter,
    CodeEnd,
    CodeLine,
    CodeStart,
    TextBlock,
    split_all,
)
from hearth.ui.chat.md_render import MarkdownWriter, prepare_document

pytestmark = pytest.mark.ui

SAMPLE = """# Plan

Some *emphasis*, **bold**, `inline code` and a [link](https://example.org).

- item one
- item **two**

```python
def add(a, b):
    \"\"\"Add two
    numbers.\"\"\"
    return a + b  # done
```

1. first
2. second

~~~
plain fence with ``` inside
~~~

| a | b |
|---|---|
| 1 | 2 |

Last paragraph
over two lines.
```js
const x = `unclosed at the end
"""


def _doc() -> QTextDocument:
    doc = QTextDocument()
    prepare_document(doc)
    cursor = QTextCursor(doc)
    cursor.insertText("Assistant")
    cursor.insertBlock()
    return doc


def _render_at_once(text: str) -> tuple[str, list[list[str]]]:
    doc, blocks = _doc(), []
    MarkdownWriter(doc, blocks, reuse_last_block=True).set_text(text)
    return doc.toHtml(), blocks


def _chunks(text: str, rng: random.Random) -> list[str]:
    out, i = [], 0
    while i < len(text):
        n = rng.choice([1, 1, 2, 3, 5, 8, 13])
        out.append(text[i : i + n])
        i += n
    return out


def test_splitter_events_do_not_depend_on_chunking() -> None:
    expected = split_all(SAMPLE)
    kinds = [type(e) for e in expected]
    assert kinds.count(CodeStart) == 3 and kinds.count(CodeEnd) == 3
    assert CodeStart("python") in expected and CodeLine("    return a + b  # done") in expected
    assert TextBlock("- item one\n- item **two**") in expected
    for seed in range(30):
        splitter = BlockSplitter()
        events = []
        for piece in _chunks(SAMPLE, random.Random(seed)):
            events += splitter.feed(piece)
        events += splitter.finish()
        assert events == expected, seed


def test_long_paragraphs_are_cut_so_the_tail_stays_small() -> None:
    text = "".join(f"line {i} of a long paragraph without blank lines\n" for i in range(200))
    splitter = BlockSplitter()
    longest_tail = 0
    for piece in _chunks(text, random.Random(1)):
        splitter.feed(piece)
        tail = splitter.tail()
        longest_tail = max(longest_tail, len(tail.text) if tail else 0)
    assert longest_tail < MAX_TEXT_BLOCK_CHARS + 100
    assert len([e for e in split_all(text) if isinstance(e, TextBlock)]) > 5


@pytest.mark.parametrize("seed", range(12))
def test_incremental_rendering_equals_rendering_at_once(qapp: QApplication, seed: int) -> None:
    expected_html, expected_blocks = _render_at_once(SAMPLE)
    rng = random.Random(seed)
    doc, blocks = _doc(), []
    writer = MarkdownWriter(doc, blocks, reuse_last_block=True)
    for piece in _chunks(SAMPLE, rng):
        writer.append(piece)
        if rng.random() < 0.6:  # frames come at arbitrary token boundaries
            writer.render()
    writer.finish()
    assert doc.toHtml() == expected_html
    assert blocks == expected_blocks
    assert writer.frames > 10


def test_rendered_content(qapp: QApplication) -> None:
    doc, blocks = _doc(), []
    MarkdownWriter(doc, blocks, reuse_last_block=True).set_text(SAMPLE)
    text = doc.toPlainText()
    assert "**" not in text.split("```")[0]  # emphasis rendered, not shown raw
    assert "inline code" in text and "Copy" in text
    assert blocks[0] == [
        "def add(a, b):",
        '    """Add two',
        '    numbers."""',
        "    return a + b  # done",
    ]
    assert blocks[2] == ["const x = `unclosed at the end"]  # an unclosed fence still renders
    html = doc.toHtml()
    assert 'href="copy:0"' in html and 'href="copy:2"' in html


def test_tail_is_redrawn_not_duplicated(qapp: QApplication) -> None:
    doc, blocks = _doc(), []
    writer = MarkdownWriter(doc, blocks, reuse_last_block=True)
    for piece in ["Hel", "lo **wor", "ld**", "\n\n```py\nx = 1", "\ny = 2\n"]:
        writer.append(piece)
        writer.render()
    assert doc.toPlainText().count("Hello") == 1
    assert "x = 1\ny = 2" in doc.toPlainText()
    assert blocks == [["x = 1", "y = 2"]]
    before = writer.blocks_rendered
    writer.append("z")
    writer.render()
    assert writer.blocks_rendered == before  # a partial line is only tail


def test_highlighter_spans() -> None:
    spans, state = highlight_line("def f(x):  # note", PYTHON)
    assert (0, 3, "keyword") in spans and (4, 1, "function") in spans
    assert spans[-1][2] == "comment" and state is None
    spans, state = highlight_line('s = """open', PYTHON)
    assert spans == [(4, 7, "string")] and state == '"""'
    spans, state = highlight_line('still""" + 1', PYTHON, state)
    assert spans[0] == (0, 8, "string") and state is None and spans[-1][2] == "number"
    spans, state = highlight_line("int x = 0; /* a", language("c"))
    assert (0, 3, "keyword") in spans and state == "*/"
    spans, state = highlight_line("b */ return", language("c"), state)
    assert spans[0] == (0, 4, "comment") and spans[1][2] == "keyword"
    assert language("unknown-lang") is language("")
