"""The loaded models and their limits as the admin status route sends them.

``supervisor/client.py`` reads this shape back into ``LoadedModel`` and
``ResidencyLimits`` (``core/residency.py``); the two sides are tested together.
"""

from __future__ import annotations

from typing import Any

from hearth.core.model_info import ModelInfo
from hearth.core.residency import LoadedModel, ResidencyLimits
from hearth.server.residency import Resident


def model_info_json(info: ModelInfo) -> dict[str, Any]:
    """Every field of ``ModelInfo``, so the app gets the same value the worker has."""
    return {
        "id": info.id,
        "path": str(info.path),
        "architecture": info.architecture,
        "n_params": info.n_params,
        "size_bytes": info.size_bytes,
        "quantization": info.quantization,
        "n_ctx_train": info.n_ctx_train,
        "n_ctx_per_slot": info.n_ctx_per_slot,
        "n_slots": info.n_slots,
        "n_vocab": info.n_vocab,
        "chat_template": info.chat_template,
        "has_fim": info.has_fim,
        "created": info.created,
        "n_layer": info.n_layer,
        "gpu_layers": info.gpu_layers,
        "devices": devices_json(info),
        "vision": info.vision,
    }


def devices_json(info: ModelInfo) -> list[dict[str, Any]]:
    """The devices the model runs on, as ggml reported them at its load."""
    return [
        {"name": d.name, "description": d.description, "type": d.kind,
         "memory_free": d.memory_free, "memory_total": d.memory_total}
        for d in info.devices
    ]  # fmt: skip


def loaded_model_json(loaded: LoadedModel) -> dict[str, Any]:
    return {
        "info": model_info_json(loaded.info),
        "memory_bytes": loaded.memory_bytes,
        "busy_slots": loaded.busy_slots,
        "pinned": loaded.pinned,
        "expires_at": loaded.expires_at,
    }


def resident_json(resident: Resident) -> dict[str, Any]:
    """A loaded model with what the worker alone knows: the estimate and the measured
    growth its memory figure comes from (``hearth ps`` shows both)."""
    return {
        **loaded_model_json(resident.describe()),
        "memory_estimate_bytes": resident.estimate_bytes,
        "memory_measured_bytes": resident.measured_bytes,
        "loaded_at": resident.loaded_at,
    }


def limits_json(limits: ResidencyLimits) -> dict[str, Any]:
    return {"max_models": limits.max_models, "memory_budget_bytes": limits.memory_budget_bytes}
