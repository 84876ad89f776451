"""The app's reading of the worker's loaded models: ``GET /hearth/v1/status``'s ``models``
and ``limits``, typed as ``core/residency.py``'s values.

The worker writes this shape in ``server/residency_format.py``; anything malformed is
left out (a model) or None (the limits), never raised, since the status is polled.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hearth.core.model_info import ComputeDevice, ModelInfo
from hearth.core.residency import LoadedModel, ResidencyLimits


@dataclass(frozen=True)
class ResidencyStatus:
    """Every loaded model (least recently used first) and the limits they share."""

    models: tuple[LoadedModel, ...] = ()
    limits: ResidencyLimits | None = None
    memory_used_bytes: int = 0


def _int(data: dict[str, Any], key: str, default: int | None = None) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(key)
    return value


def _str(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise ValueError(key)
    return value


def _device(data: Any) -> ComputeDevice:
    if not isinstance(data, dict):
        raise ValueError("device")
    return ComputeDevice(_str(data, "name"), _str(data, "description"), _str(data, "type"),
                         _int(data, "memory_free"), _int(data, "memory_total"))  # fmt: skip


def decode_model_info(data: Any) -> ModelInfo:
    """``ModelInfo`` from its JSON; ValueError naming the first field that is wrong."""
    if not isinstance(data, dict):
        raise ValueError("info")
    template = data.get("chat_template")
    devices = data.get("devices", [])
    if not isinstance(devices, list):
        raise ValueError("devices")
    return ModelInfo(
        id=_str(data, "id"),
        path=Path(_str(data, "path")),
        architecture=_str(data, "architecture"),
        n_params=_int(data, "n_params"),
        size_bytes=_int(data, "size_bytes"),
        quantization=_str(data, "quantization"),
        n_ctx_train=_int(data, "n_ctx_train"),
        n_ctx_per_slot=_int(data, "n_ctx_per_slot"),
        n_slots=_int(data, "n_slots"),
        n_vocab=_int(data, "n_vocab"),
        chat_template=template if isinstance(template, str) else None,
        has_fim=data.get("has_fim") is True,
        created=_int(data, "created", 0),
        n_layer=_int(data, "n_layer", 0),
        gpu_layers=_int(data, "gpu_layers", 0),
        devices=tuple(_device(d) for d in devices),
        vision=data.get("vision") is True,
    )


def decode_loaded_model(data: Any) -> LoadedModel:
    if not isinstance(data, dict):
        raise ValueError("model")
    expires = data.get("expires_at")
    if expires is not None and (isinstance(expires, bool) or not isinstance(expires, int | float)):
        raise ValueError("expires_at")
    return LoadedModel(
        info=decode_model_info(data.get("info")),
        memory_bytes=_int(data, "memory_bytes"),
        busy_slots=_int(data, "busy_slots", 0),
        pinned=data.get("pinned") is True,
        expires_at=None if expires is None else float(expires),
    )


def decode_residency(status: dict[str, Any]) -> ResidencyStatus:
    """The loaded models and limits of a status answer (an older worker's has neither:
    no models, no limits)."""
    models = []
    for item in status.get("models") or []:
        try:
            models.append(decode_loaded_model(item))
        except ValueError:
            continue
    limits = None
    raw = status.get("limits")
    if isinstance(raw, dict):
        try:
            limits = ResidencyLimits(_int(raw, "max_models"), _int(raw, "memory_budget_bytes"))
        except ValueError:
            limits = None
    used = status.get("memory_used_bytes")
    return ResidencyStatus(
        tuple(models), limits, used if isinstance(used, int) and not isinstance(used, bool) else 0
    )
