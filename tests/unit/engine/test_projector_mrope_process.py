"""The synthetic Qwen2-VL, Qwen2.5-VL (tests/gguf_qwen2vl.py) and Qwen3-VL
(tests/gguf_qwen3vl.py) projectors in a child process first:
where an abort in libmtmd (a GGML_ASSERT on a tensor it misses) would end the process,
this test sees an exit code, before the in-process tests load the pair."""

from __future__ import annotations

from pathlib import Path

import pytest

from child_runs import run_python

_CHILD = """
import json, sys
from pathlib import Path
from hearth.core.images import IMAGE_MARKER, ImageInput
from hearth.core.model_info import LoadConfig
from hearth.engine.model import LlamaModel
from hearth.engine.projector import Projector

model = LlamaModel(LoadConfig(model_path=Path(sys.argv[1]), n_ctx=256, n_parallel=1))
projector = Projector.load(Path(sys.argv[2]), model, n_threads=1, use_gpu=False)
wide = ImageInput(112, 56, bytes(i % 251 for i in range(112 * 56 * 3)), "wide", "PNG")
with projector.tokenize("a " + IMAGE_MARKER + " b", [wide]) as prompt:
    image = prompt.images[0]
    values = projector.encode(image).values
    grid = projector.grid_positions(image, 10)
    print(json.dumps({
        "mrope": projector.uses_mrope, "n_tokens": image.n_tokens, "n_pos": image.n_pos,
        "shape": list(values.shape), "grid": grid.tolist(),
        "text_after": prompt.pos_at(prompt.n_tokens - 1) - prompt.n_tokens + 1,
    }))
projector.close()
model.close()
"""


@pytest.mark.parametrize(
    ("pair", "width"),
    [
        ("tiny_qwen2vl", 256),
        ("tiny_qwen25vl", 256),
        ("tiny_qwen3vl", 256 * 3),
        ("tiny_qwen3vlmoe", 256 * 3),
    ],
)
def test_the_projector_loads_and_places_an_image_on_a_grid(
    pair: str, width: int, request: pytest.FixtureRequest
) -> None:
    """Qwen3-VL's embeddings are the text width times 1 + its two deepstack layers: the
    width its text model reads (n_embd_inp), not its n_embd."""
    model, projector = request.getfixturevalue(pair)
    result = run_python("-c", _CHILD, model, projector).result
    assert result["mrope"] is True
    # 112 x 56 pixels: 8 x 4 patches of 14, merged 2 x 2 into a 4 x 2 grid of tokens
    assert result["n_tokens"] == 8 and result["n_pos"] == 4  # the grid's longer side
    assert result["shape"] == [8, width]
    t, row, col, spare = result["grid"]
    assert t == [10] * 8  # one time step for the whole picture, at pos_0
    assert row == [10, 10, 10, 10, 11, 11, 11, 11]  # row-major, 4 columns
    assert col == [10, 11, 12, 13] * 2
    assert spare == [0] * 8
    # the text after the image continues n_pos, not n_tokens, on
    assert result["text_after"] == 4 - 8


_DEEPSTACK_CHILD = """
import json, sys
from pathlib import Path
import llama_cpp
import numpy as np
from hearth.core.images import IMAGE_MARKER, ImageInput
from hearth.core.model_info import LoadConfig
from hearth.engine.image_batch import EmbeddingBatch
from hearth.engine.media_prompt import ImageEmbeddings
from hearth.engine.model import LlamaModel
from hearth.engine.projector import Projector

model = LlamaModel(LoadConfig(model_path=Path(sys.argv[1]), n_ctx=256, n_parallel=1))
projector = Projector.load(Path(sys.argv[2]), model, n_threads=1, use_gpu=False)
text_width = llama_cpp.llama_model_n_embd(model.model)
batch = EmbeddingBatch(model.n_embd, model.config.n_ubatch, grid=True)
wide = ImageInput(112, 56, bytes(i % 251 for i in range(112 * 56 * 3)), "wide", "PNG")

def next_token_logits(image, values, grid):
    llama_cpp.llama_memory_clear(model.memory, True)
    embeddings = ImageEmbeddings(image.id, values, non_causal=False)
    batch.decode(model.ctx, embeddings, seq_id=0, pos=0, grid=grid, logits_last=True)
    row = llama_cpp.llama_get_logits_ith(model.ctx, batch.last_index(embeddings))
    return np.ctypeslib.as_array(row, shape=(model.n_vocab,)).copy()

with projector.tokenize(IMAGE_MARKER, [wide], add_special=False) as prompt:
    image = prompt.images[0]
    values = projector.encode(image).values
    grid = projector.grid_positions(image, 0)
    full = next_token_logits(image, values, grid)
    again = next_token_logits(image, values, grid)
    main_only = values.copy()
    main_only[:, text_width:] = 0.0
    without = next_token_logits(image, main_only, grid)
print(json.dumps({
    "text_width": text_width, "input_width": model.n_embd,
    "repeat": float(np.abs(full - again).max()),
    "deepstack_effect": float(np.abs(full - without).max()),
    "deepstack_norm": float(np.abs(values[:, text_width:]).mean()),
}))
batch.free()
projector.close()
model.close()
"""


def test_the_deepstack_slices_reach_the_text_model(tiny_qwen3vl: tuple[Path, Path]) -> None:
    """Qwen3-VL's text model reads an image embedding three text widths wide and adds
    the two deepstack slices at its first layers: zeroing them changes the next token's
    logits, where decoding the same embeddings twice does not."""
    model, projector = tiny_qwen3vl
    result = run_python("-c", _DEEPSTACK_CHILD, model, projector).result
    assert result["text_width"] == 256 and result["input_width"] == 256 * 3
    assert result["deepstack_norm"] > 0.01  # the projector's deepstack mergers speak
    assert result["repeat"] < 1e-3  # (0.0 on a CPU)
    assert result["deepstack_effect"] > 0.1  # (about 1.8 on this pair)
