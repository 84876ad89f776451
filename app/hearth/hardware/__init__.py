"""This machine's memory and compute, and whether a model fits in it (Qt-free)."""

from hearth.hardware.fit import (
    ContextPlan,
    FitEstimate,
    FitVerdict,
    MemoryBreakdown,
    QuantCandidate,
    QuantSuggestion,
    estimate_fit,
    estimate_memory,
    rank_quantizations,
    suggest_quantization,
)
from hearth.hardware.probe import GpuInfo, SystemMemory, probe_system

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
