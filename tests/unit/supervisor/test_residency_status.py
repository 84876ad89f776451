"""The app reads back exactly the loaded models the worker's status route writes."""

from __future__ import annotations

from pathlib import Path

from hearth.core.model_info import ComputeDevice, ModelInfo
from hearth.core.residency import LoadedModel, ResidencyLimits
from hearth.server.residency_format import limits_json, loaded_model_json
from hearth.supervisor.residency_status import decode_residency


def _info(name: str, **changes: object) -> ModelInfo:
    fields: dict[str, object] = dict(
        id=name, path=Path(f"/models/{name}.gguf"), architecture="llama", n_params=1000,
        size_bytes=4096, quantization="Q8_0", n_ctx_train=2048, n_ctx_per_slot=512, n_slots=2,
        n_vocab=300, chat_template="{{ messages }}", has_fim=True, created=1700000000,
        n_layer=4, gpu_layers=2, vision=False,
        devices=(ComputeDevice("CUDA0", "A GPU", "gpu", 1 << 30, 2 << 30),),
    )  # fmt: skip
    fields.update(changes)
    return ModelInfo(**fields)  # type: ignore[arg-type]


def test_loaded_models_and_limits_round_trip() -> None:
    models = (
        LoadedModel(_info("chat"), 123_456, busy_slots=1, pinned=True, expires_at=None),
        LoadedModel(_info("fim", chat_template=None, devices=()), 999, 0, False, 1.8e9 + 0.5),
    )
    limits = ResidencyLimits(max_models=3, memory_budget_bytes=16 << 30)
    status = {
        "state": "ready",
        "models": [loaded_model_json(m) for m in models],
        "limits": limits_json(limits),
        "memory_used_bytes": 124_455,
    }
    decoded = decode_residency(status)
    assert decoded.models == models
    assert decoded.limits == limits
    assert decoded.memory_used_bytes == 124_455


def test_an_older_worker_or_a_malformed_entry_is_left_out_never_raised() -> None:
    assert decode_residency({"state": "ready", "model": "x"}).models == ()
    good = loaded_model_json(LoadedModel(_info("ok"), 1, 0, True, None))
    bad = {**good, "memory_bytes": "lots"}
    decoded = decode_residency({"models": [bad, good, 7], "limits": {"max_models": "3"}})
    assert [m.info.id for m in decoded.models] == ["ok"]
    assert decoded.limits is None
