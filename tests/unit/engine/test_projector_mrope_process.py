"""The synthetic Qwen2-VL and Qwen2.5-VL projectors (tests/gguf_qwen2vl.py) in a child
process first:
where an abort in libmtmd (a GGML_ASSERT on a tensor it misses) would end the process,
this test sees an exit code, before the in-process tests load the pair."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

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


@pytest.mark.parametrize("pair", ["tiny_qwen2vl", "tiny_qwen25vl"])
def test_the_projector_loads_and_places_an_image_on_a_grid(
    pair: str, request: pytest.FixtureRequest
) -> None:
    model, projector = request.getfixturevalue(pair)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(model), str(projector)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["mrope"] is True
    # 112 x 56 pixels: 8 x 4 patches of 14, merged 2 x 2 into a 4 x 2 grid of tokens
    assert result["n_tokens"] == 8 and result["n_pos"] == 4  # the grid's longer side
    assert result["shape"] == [8, 256]
    t, row, col, spare = result["grid"]
    assert t == [10] * 8  # one time step for the whole picture, at pos_0
    assert row == [10, 10, 10, 10, 11, 11, 11, 11]  # row-major, 4 columns
    assert col == [10, 11, 12, 13] * 2
    assert spare == [0] * 8
    # the text after the image continues n_pos, not n_tokens, on
    assert result["text_after"] == 4 - 8
