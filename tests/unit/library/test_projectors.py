"""A projector's header as the Load dialog reads it: what it is, how wide its embeddings
are, and the clear refusals (a text model, another model's projector)."""

from __future__ import annotations

from pathlib import Path

import pytest

import gguf_projector
from hearth.library.errors import InvalidModelFileError
from hearth.library.projectors import ProjectorFileError, mismatch, read_projector


def test_a_projector_says_its_type_width_and_size(tiny_projector: Path) -> None:
    facts = read_projector(tiny_projector)
    assert (facts.projector_type, facts.n_embd) == ("gemma3", 256)
    assert 0 < facts.size_bytes <= tiny_projector.stat().st_size
    assert mismatch(facts, "tiny", 256) is None
    assert mismatch(facts, "tiny", None) is None  # unknown: the worker decides
    message = mismatch(facts, "big.gguf", 512)
    assert message is not None and "256-wide" in message and "big.gguf reads 512-wide" in message


def test_a_text_model_or_a_non_gguf_is_refused(tiny_model_f16: Path, tmp_path: Path) -> None:
    with pytest.raises(ProjectorFileError, match="is a llama model, not a vision projector"):
        read_projector(tiny_model_f16)
    junk = tmp_path / "mmproj-junk.gguf"
    junk.write_bytes(b"not a gguf at all")
    with pytest.raises(InvalidModelFileError):
        read_projector(junk)


def test_a_projector_type_without_a_known_width_is_not_judged(tmp_path: Path) -> None:
    odd = gguf_projector.write_projector(tmp_path / "mmproj-odd.gguf", projector_type="odd")
    facts = read_projector(odd)
    assert (facts.projector_type, facts.n_embd) == ("odd", None)
    assert mismatch(facts, "tiny", 4096) is None


def test_a_deepstack_projector_matches_its_models_header_width(
    tiny_qwen3vl: tuple[Path, Path], tiny_qwen2vl: tuple[Path, Path]
) -> None:
    """Qwen3-VL's embeddings hold the text width three times (two deepstack slices), while
    its text model's header says one slice: the Load dialog compares slices, so it offers
    the pair's own projector and refuses it for a model of another width."""
    from hearth.library.gguf_metadata import read_metadata

    model, projector = tiny_qwen3vl
    width = read_metadata(model).kv["qwen3vl.embedding_length"]
    facts = read_projector(projector)
    assert (facts.projector_type, facts.n_embd) == ("qwen3vl_merger", width)
    assert mismatch(facts, model.name, int(str(width))) is None
    assert read_projector(tiny_qwen2vl[1]).n_embd == width  # both synthetic pairs are 256 wide
