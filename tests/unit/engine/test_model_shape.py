"""Model files llama.cpp loads but would abort on later (a GGML_ASSERT ends the worker):
refused at load with a message instead. Run in a child process, so that a missed check
shows as an exit code rather than the end of the test run."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import gguf_qwen3vl
from child_runs import run_python

_CHILD = """
import json, sys
from pathlib import Path
from hearth.core.errors import ModelLoadError
from hearth.core.model_info import LoadConfig
from hearth.engine.model import LlamaModel

try:
    model = LlamaModel(LoadConfig(model_path=Path(sys.argv[1]), n_ctx=256, n_parallel=1))
except ModelLoadError as exc:
    print(json.dumps({"error": str(exc)}))
else:
    print(json.dumps({"n_embd": model.n_embd}))
    model.close()
"""


def test_as_many_deepstack_layers_as_blocks_is_refused(tmp_path: Path) -> None:
    spec = dataclasses.replace(gguf_qwen3vl.Qwen3VLSpec(), text_n_layer=2)  # 2 deepstack
    bad = gguf_qwen3vl.write_qwen3vl_text(tmp_path / "Bad-Qwen3-VL.gguf", spec, malformed=True)
    error = str(run_python("-c", _CHILD, bad).result.get("error"))
    assert "Bad-Qwen3-VL.gguf is malformed" in error and "2 deepstack layers for 2 blocks" in error


def test_fewer_deepstack_layers_than_blocks_loads(tmp_path: Path) -> None:
    good = gguf_qwen3vl.write_qwen3vl_text(tmp_path / "Good-Qwen3-VL.gguf")
    assert run_python("-c", _CHILD, good).result == {"n_embd": 256 * 3}
