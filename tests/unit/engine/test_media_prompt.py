"""Entries and positions of a prompt with images (engine/media_prompt.py), on typed
parts alone: an M-RoPE image of 6 embeddings on a 2 x 3 grid takes 3 positions."""

from __future__ import annotations

import pytest

from hearth.engine.media_prompt import ImageChunk, MediaPrompt, TextRun


class _NoChunks:
    def chunk(self, index: int) -> int:
        raise AssertionError("not encoded here")

    def free(self) -> None:
        return None


def _prompt(n_pos: int) -> MediaPrompt:
    image = ImageChunk(id="pic", n_tokens=6, n_pos=n_pos, non_causal=False, index=1,
                       source=_NoChunks())  # fmt: skip
    return MediaPrompt([TextRun((10, 11, 12)), image, TextRun((13, 14))], _NoChunks())


def test_text_after_a_grid_image_continues_its_n_pos_on() -> None:
    prompt = _prompt(n_pos=3)
    assert prompt.n_tokens == 11 and prompt.n_pos == 8
    assert [prompt.pos_at(n) for n in (0, 2, 3)] == [0, 2, 3]  # up to the image's start
    assert [prompt.pos_at(n) for n in (9, 10)] == [6, 7]  # after it: 3 positions, not 6
    assert prompt.pos_at(11) == 8 and prompt.pos_at(13) == 10  # generated tokens go on


def test_without_a_grid_positions_are_entries() -> None:
    prompt = _prompt(n_pos=6)
    assert [prompt.pos_at(n) for n in (0, 3, 9, 10, 11)] == [0, 3, 9, 10, 11]


def test_no_position_is_asked_for_inside_an_image() -> None:
    with pytest.raises(ValueError, match="inside an image"):
        _prompt(n_pos=3).pos_at(4)
