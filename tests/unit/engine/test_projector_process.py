"""libmtmd in a child process: where an abort (a GGML_ASSERT on a file it cannot use)
would end the process, these tests see an exit code instead of losing the test run."""

from __future__ import annotations

from pathlib import Path

import gguf_projector
from child_runs import run_python

_CHILD = """
import json, sys
from pathlib import Path
from hearth.core.errors import ModelLoadError
from hearth.core.images import IMAGE_MARKER, ImageInput
from hearth.core.model_info import LoadConfig
from hearth.engine.model import LlamaModel
from hearth.engine.projector import Projector

model = LlamaModel(LoadConfig(model_path=Path(sys.argv[1]), n_ctx=256, n_parallel=1))
try:
    projector = Projector.load(Path(sys.argv[2]), model, n_threads=1, use_gpu=False)
except ModelLoadError as exc:
    print(json.dumps({"error": str(exc)}))
else:
    gray = ImageInput(64, 48, bytes([128]) * 64 * 48 * 3, "gray", "PNG")
    with projector.tokenize("a " + IMAGE_MARKER, [gray]) as prompt:
        values = projector.encode(prompt.images[0]).values
        print(json.dumps({"n_tokens": prompt.n_tokens, "shape": list(values.shape)}))
    projector.close()
model.close()
"""


def test_the_projector_loads_encodes_and_frees_in_a_child(
    tiny_model_f16: Path, tiny_projector: Path
) -> None:
    child = run_python("-c", _CHILD, tiny_model_f16, tiny_projector)
    result = child.result
    spec = gguf_projector.ProjectorSpec()
    assert result["shape"] == [spec.n_image_tokens, spec.text_n_embd]
    assert isinstance(result["n_tokens"], int) and result["n_tokens"] > spec.n_image_tokens
    # libmtmd logs through Python's logging (debug level), not straight to stderr, where
    # its tokenizer would print the prompt's text ("add_text: ...")
    assert "clip_model_loader" not in child.stderr and "add_text" not in child.stderr


def test_a_projector_type_llama_cpp_does_not_know_is_refused_not_aborted(
    tiny_model_f16: Path, tmp_path: Path
) -> None:
    """No header check knows this type: libmtmd's own refusal must come back as an
    error, not end the worker."""
    odd = gguf_projector.write_projector(tmp_path / "mmproj-odd.gguf", projector_type="hearth9")
    result = run_python("-c", _CHILD, tiny_model_f16, odd).result
    assert "could not load the projector mmproj-odd.gguf" in str(result["error"])
    assert "hearth9" in str(result["error"])
