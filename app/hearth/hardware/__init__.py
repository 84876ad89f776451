"""This machine's memory and compute, and whether a model fits in it (Qt-free)."""

from hearth.hardware.fit import (
    ContextPlan,
    FitEstimate,
    FitVerdict,
    MemoryBreakdown,
    estimate_fit,
    estimate_memory,
)
from hearth.hardware.probe import GpuInfo, SystemMemory, probe_system
from hearth.hardware.quant_choice import (
    QuantCandidate,
    QuantSuggestion,
    rank_quantizations,
    suggest_quantization,
)

__all__ = [
    "ContextPlan",
    "FitEstimate",
    "FitVerdict",
    "GpuInfo",
    "MemoryBreakdown",
    "QuantCandidate",
    "QuantSuggestion",
    "SystemMemory",
    "estimate_fit",
    "estimate_memory",
    "probe_system",
    "rank_quantizations",
    "suggest_quantization",
]
