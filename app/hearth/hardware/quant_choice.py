"""Which quantization of a model to download: each file on offer judged by the fit
estimate, and the one to suggest.

Kept apart from ``fit.py``, which answers for one model as it is: this part only
scales that answer across the files of a repo (``hearth pull`` and Discover's table),
the weights sized by file, everything else shared.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hearth.hardware.fit import ContextPlan, FitEstimate, FitVerdict, estimate_fit
from hearth.hardware.probe import SystemMemory
from hearth.library.gguf_metadata import GgufMetadata


@dataclass(frozen=True)
class QuantCandidate:
    """One quantization of a model on offer, e.g. a file in a Hub repo."""

    label: str  # "Q4_K_M"
    size_bytes: int  # file size (all shards)
    name: str | None = None  # file name or id, for the caller


@dataclass(frozen=True)
class QuantSuggestion:
    candidate: QuantCandidate
    estimate: FitEstimate
    ranked: tuple[tuple[QuantCandidate, FitEstimate], ...]  # every candidate, largest first


def rank_quantizations(
    meta: GgufMetadata,
    candidates: Sequence[QuantCandidate],
    plan: ContextPlan,
    system: SystemMemory,
    draft: GgufMetadata | None = None,
) -> list[tuple[QuantCandidate, FitEstimate]]:
    """Estimate each candidate from ``meta`` (any quantization of the same model):
    the architecture and context are shared, only the weights scale with file size.
    A ``draft`` model to be loaded beside it counts in each."""
    base = max(1, meta.tensor_bytes)
    ranked = []
    for cand in sorted(candidates, key=lambda c: c.size_bytes, reverse=True):
        scale = max(0, cand.size_bytes - meta.data_offset) / base
        ranked.append((cand, estimate_fit(meta, plan, system, weight_scale=scale, draft=draft)))
    return ranked


def suggest_quantization(
    meta: GgufMetadata,
    candidates: Sequence[QuantCandidate],
    plan: ContextPlan,
    system: SystemMemory,
    draft: GgufMetadata | None = None,
) -> QuantSuggestion | None:
    """The largest candidate that runs fully on the GPU (beside ``draft``, if given);
    failing that, the largest that fits at all (split or CPU only); None when none fits."""
    ranked = rank_quantizations(meta, candidates, plan, system, draft)
    for wanted in ({FitVerdict.FULL_GPU}, {FitVerdict.PARTIAL_GPU, FitVerdict.CPU_ONLY}):
        for cand, est in ranked:
            if est.verdict in wanted:
                return QuantSuggestion(cand, est, tuple(ranked))
    return None
