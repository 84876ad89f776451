"""The projector header check (engine/projector_file.py) on the synthetic M-RoPE pairs:
a Qwen3-VL projector's embeddings are its text width times one plus its deepstack
mergers, and a pair whose widths differ is refused with a message that says which file
is wrong, before libmtmd sees it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hearth.core.errors import ModelLoadError
from hearth.core.model_info import LoadConfig
from hearth.engine.model import LlamaModel
from hearth.engine.projector import Projector
from hearth.engine.projector_file import read_projector_file


def _load(path: Path) -> Iterator[LlamaModel]:
    loaded = LlamaModel(LoadConfig(model_path=path, n_ctx=256, n_parallel=1))
    yield loaded
    loaded.close()


@pytest.fixture(scope="module")
def qwen2vl_text(tiny_qwen2vl: tuple[Path, Path]) -> Iterator[LlamaModel]:
    yield from _load(tiny_qwen2vl[0])


@pytest.fixture(scope="module")
def qwen3vl_text(tiny_qwen3vl: tuple[Path, Path]) -> Iterator[LlamaModel]:
    yield from _load(tiny_qwen3vl[0])


def test_a_qwen3vl_projector_counts_its_deepstack_mergers(
    tiny_qwen3vl: tuple[Path, Path], tiny_qwen2vl: tuple[Path, Path]
) -> None:
    qwen3 = read_projector_file(tiny_qwen3vl[1])
    assert (qwen3.projector_type, qwen3.n_embd, qwen3.n_deepstack) == ("qwen3vl_merger", 768, 2)
    qwen2 = read_projector_file(tiny_qwen2vl[1])
    assert (qwen2.projector_type, qwen2.n_embd, qwen2.n_deepstack) == ("qwen2vl_merger", 256, 0)


def test_the_qwen3vl_text_model_reads_the_wider_input(qwen3vl_text: LlamaModel) -> None:
    assert qwen3vl_text.n_embd == 768  # llama_model_n_embd_inp: 256 * (1 + 2 deepstack)


def test_a_qwen3vl_projector_on_a_model_without_deepstack_is_refused(
    qwen2vl_text: LlamaModel, tiny_qwen3vl: tuple[Path, Path]
) -> None:
    with pytest.raises(ModelLoadError) as refused:
        Projector.load(tiny_qwen3vl[1], qwen2vl_text, n_threads=1, use_gpu=False)
    message = str(refused.value)
    assert "768-wide" in message and "2 deepstack layers" in message
    assert "reads 256-wide" in message and "belongs to another model" in message


def test_a_qwen2vl_projector_on_a_qwen3vl_model_is_refused(
    qwen3vl_text: LlamaModel, tiny_qwen2vl: tuple[Path, Path]
) -> None:
    with pytest.raises(ModelLoadError, match=r"makes 256-wide embeddings but .* reads 768-wide"):
        Projector.load(tiny_qwen2vl[1], qwen3vl_text, n_threads=1, use_gpu=False)
