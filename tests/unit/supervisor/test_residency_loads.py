"""The admin load's settings as the app sends them: every LoadConfig field, in JSON, and
read back by the worker's own load route code into the config the app meant."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from hearth.config.launch import NO_MODEL
from hearth.core.model_info import LoadConfig
from hearth.server.load_routes import LoadRequest, checked
from hearth.supervisor.launch_options import LoadOptions
from hearth.supervisor.residency_loads import load_fields


def test_every_setting_goes_and_the_worker_reads_back_the_same_config(tmp_path: Path) -> None:
    draft = tmp_path / "draft.gguf"
    options = LoadOptions(
        n_ctx=2048, n_parallel=3, n_gpu_layers=5, cache_type_k="q8_0", cache_type_v="q8_0",
        flash_attention="on", use_mmap=False, spec_mode="draft", draft_model=str(draft),
        draft_max=6, chat_format="hermes",
    )  # fmt: skip
    fields = load_fields(options)
    names = {f.name for f in dataclasses.fields(LoadConfig)} - {"model_path"}
    assert set(fields) == names  # nothing left to come from another model's load
    wire = json.loads(json.dumps({"model": "m", **fields}))
    request = LoadRequest.model_validate(wire)
    model = tmp_path / "m.gguf"
    got = checked(dataclasses.replace(LoadConfig(model_path=model), **request.changes()))
    want = options.apply(LoadConfig(model_path=model))
    assert got == want


def test_defaults_leave_no_draft_model() -> None:
    fields = load_fields(LoadOptions())
    assert fields["draft_model_path"] is None
    assert fields["n_ctx"] == LoadConfig(model_path=NO_MODEL).n_ctx


def test_a_load_beside_carries_the_projector_as_chosen(tmp_path: Path) -> None:
    """The projector a load beside the others gets is the one the worker's own launch
    would get (``LoadOptions.projector_for``): the pair beside the model, a file chosen
    by hand, or none; never left to a previous load of that model."""
    model = tmp_path / "tiny-vision-F16.gguf"
    model.write_bytes(b"GGUF")
    (tmp_path / "mmproj-F16.gguf").write_bytes(b"GGUF")
    chosen = tmp_path / "other" / "mmproj-other-F16.gguf"
    assert load_fields(LoadOptions(), model)["mmproj_path"] == str(tmp_path / "mmproj-F16.gguf")
    assert load_fields(LoadOptions(mmproj=str(chosen)), model)["mmproj_path"] == str(chosen)
    assert load_fields(LoadOptions(vision=False), model)["mmproj_path"] is None
