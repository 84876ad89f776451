"""The special tokens a model uses for fill-in-the-middle, as plain values.

The engine reads them from the loaded vocabulary; the server's ``/infill`` dialect lays
out its prompt with them (see ``server/infill_prompt.py``). Repository-level tokens
(``<|repo_name|>``, ``<|file_sep|>`` in Qwen2.5-Coder) are optional: models trained with
them read context from other files in that layout.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FimLayout:
    """FIM token ids of the loaded model, and what bounds an infill prompt's parts."""

    pre: int
    suf: int
    mid: int
    rep: int | None = None  # repository name marker
    sep: int | None = None  # file separator marker
    bos: int | None = None  # the BOS the vocabulary adds, None when it adds none
    n_batch: int = 2048  # llama.cpp's logical batch: bounds the prefix and suffix taken
