"""How fast a model will generate on this machine: decode tokens per second.

Decoding one token reads every weight the token passes through once, so at batch size
one generation is bound by memory bandwidth, not by arithmetic::

    seconds per token ≈ bytes read from RAM / RAM bandwidth
                        + bytes read from GPU memory / GPU bandwidth

(layers run one after another, so the two parts add up). The token embeddings are a
lookup of one row, not a full read, and are left out. For a mixture-of-experts model
only the experts a token is routed to are read: their share comes from the GGUF header
(``expert_used_count / expert_count`` of the expert tensors), or from the picks file
before the header is at hand.

RAM bandwidth is measured, once, with a numpy copy spread over the physical cores
(:func:`measure_ram_bandwidth`, about 0.1 s; the caller caches the result). GPU memory
bandwidth comes from a small table of known chips (:data:`GPU_BANDWIDTH`), since
timing a GPU copy would need the GPU runtime in this process. Real decoding reaches
only part of the raw bandwidth (:data:`DECODE_EFFICIENCY`: kernels, the KV cache,
thread sync); that factor is a calibration against llama.cpp's own numbers, and the
result is an estimate to tell 3 tok/s from 30 tok/s, not a benchmark.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass

from hearth.core.units import MIB
from hearth.hardware.fit import (
    FitEstimate,
    FitVerdict,
    MemoryBreakdown,
)
from hearth.hardware.probe import GpuInfo, SystemMemory
from hearth.library.gguf_metadata import GgufMetadata

log = logging.getLogger(__name__)

GB = 1e9
# Decode reaches about this share of the measured copy bandwidth. Calibrated on
# llama.cpp's CPU decode (a 7B Q4_K_M: ~4.4 GB read per token; 9-12 tok/s on a
# dual-channel DDR5 desktop whose copy benchmark shows ~65 GB/s) and its CUDA decode
# (RTX 4090: ~130-150 tok/s on the same file, 1008 GB/s nominal).
DECODE_EFFICIENCY = 0.7
# Nominal memory bandwidth (GB/s) of common GPUs, matched against the driver's name.
# Longer keys first, so "RTX 4090 D" does not read as "RTX 4090" and "A100 80GB" wins
# over "A100".
GPU_BANDWIDTH: dict[str, float] = {
    "H200": 4800,
    "H100 PCIE": 2000,
    "H100": 3350,
    "GH200": 4000,
    "B200": 8000,
    "A100 80GB": 2039,
    "A100": 1555,
    "L40S": 864,
    "L40": 864,
    "L4": 300,
    "A10G": 600,
    "A10": 600,
    "T4": 320,
    "V100": 900,
    "RTX 5090": 1792,
    "RTX 5080": 960,
    "RTX 5070 TI": 896,
    "RTX 5070": 672,
    "RTX 5060 TI": 448,
    "RTX 4090": 1008,
    "RTX 4080": 717,
    "RTX 4070 TI": 504,
    "RTX 4070": 504,
    "RTX 4060 TI": 288,
    "RTX 4060": 272,
    "RTX 3090": 936,
    "RTX 3080 TI": 912,
    "RTX 3080": 760,
    "RTX 3070": 448,
    "RTX 3060": 360,
    "RTX A6000": 768,
    "RTX 6000 ADA": 960,
}
# Work per token that does not shrink with the model (graph build, sampling, thread
# sync, kernel launches): it caps tiny models near 1,000 tok/s, as llama.cpp measures.
PER_TOKEN_OVERHEAD_S = 0.001
UNKNOWN_GPU_BANDWIDTH = 300 * GB  # a mid-range discrete GPU, when the name is unknown
FALLBACK_RAM_BANDWIDTH = 20 * GB  # if measuring fails: a laptop's single channel
_BENCH_BYTES = 32 * 1024 * 1024  # per thread, x4 threads: past the CPU caches
COMPUTE_OVERHEAD_BYTES = 400 * MIB  # compute buffers at a 4K context, for rough fits


@dataclass(frozen=True)
class Bandwidth:
    """Memory bandwidth of this machine, in bytes per second."""

    ram_bps: float
    gpu_bps: float | None = None  # None: no GPU (or one llama.cpp cannot use)
    measured: bool = True  # False: ram_bps is the fallback, not a measurement


# --------------------------------------------------------------------------- measuring


def _copy_rate(threads: int, nbytes: int, repeats: int) -> float:
    import numpy as np

    src = [np.ones(nbytes // 8, dtype=np.float64) for _ in range(threads)]
    dst = [np.empty_like(a) for a in src]
    best = 0.0
    for _ in range(repeats):
        barrier = threading.Barrier(threads + 1)

        def copy(i: int, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            np.copyto(dst[i], src[i])  # numpy releases the GIL for the copy

        workers = [threading.Thread(target=copy, args=(i,)) for i in range(threads)]
        for w in workers:
            w.start()
        barrier.wait()
        start = time.perf_counter()
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - start
        if elapsed > 0:
            best = max(best, 2 * nbytes * threads / elapsed)  # each byte read and written
    return best


def measure_ram_bandwidth(threads: int = 4, nbytes: int = _BENCH_BYTES, repeats: int = 5) -> float:
    """Bytes per second a parallel numpy copy moves (read + write), best of ``repeats``.

    Blocking (about 0.1-0.5 s and ``2 * threads * nbytes`` of RAM): run it off the
    GUI thread, once, and keep the result.
    """
    threads = max(1, min(threads, 8))
    try:
        rate = _copy_rate(threads, nbytes, repeats)
    except (MemoryError, RuntimeError) as exc:
        log.warning("could not measure the memory bandwidth: %s", exc)
        return FALLBACK_RAM_BANDWIDTH
    log.info("memory bandwidth: %.1f GB/s (%d threads)", rate / GB, threads)
    return rate if rate > 0 else FALLBACK_RAM_BANDWIDTH


def gpu_bandwidth(gpu: GpuInfo, ram_bps: float) -> float:
    """Nominal bandwidth of ``gpu``: unified memory is the RAM's; else the table's."""
    if gpu.unified_memory:
        return ram_bps
    name = re.sub(r"\s+", " ", gpu.name.upper())
    for key in sorted(GPU_BANDWIDTH, key=len, reverse=True):
        if key in name:
            return GPU_BANDWIDTH[key] * GB
    return UNKNOWN_GPU_BANDWIDTH


def machine_bandwidth(system: SystemMemory, ram_bps: float, *, measured: bool = True) -> Bandwidth:
    """The bandwidths for ``system`` (the fastest GPU's, when it has several)."""
    gpu = max((gpu_bandwidth(g, ram_bps) for g in system.gpus), default=None)
    return Bandwidth(ram_bps=ram_bps, gpu_bps=gpu, measured=measured)


# --------------------------------------------------------------------------- estimating


def active_fraction(meta: GgufMetadata) -> float:
    """The share of the weights one token reads: 1.0 for a dense model; for a mixture
    of experts, the routed experts' share of the expert tensors plus everything else."""
    arch = meta.architecture
    count = meta.kv.get(f"{arch}.expert_count")
    used = meta.kv.get(f"{arch}.expert_used_count")
    if not isinstance(count, int) or not isinstance(used, int) or count <= 0:
        return 1.0
    total = meta.tensor_bytes
    experts = sum(t.n_bytes for t in meta.tensors if "_exps." in t.name)
    if total <= 0 or experts <= 0:
        return 1.0
    read = total - experts + experts * min(used, count) / count
    return read / total


def tokens_per_second(
    ram_bytes: float,
    gpu_bytes: float,
    bandwidth: Bandwidth,
    *,
    efficiency: float = DECODE_EFFICIENCY,
) -> float:
    """Decode speed when each token reads ``ram_bytes`` from RAM and ``gpu_bytes`` from
    GPU memory."""
    seconds = ram_bytes / bandwidth.ram_bps
    if gpu_bytes:
        seconds += gpu_bytes / (bandwidth.gpu_bps or UNKNOWN_GPU_BANDWIDTH)
    if seconds <= 0:
        return 0.0
    return 1 / (seconds / efficiency + PER_TOKEN_OVERHEAD_S)


def _read_per_token(mem: MemoryBreakdown, gpu_layers: int, full: bool) -> tuple[float, float]:
    """(RAM bytes, GPU bytes) read per token with the last ``gpu_layers`` on the GPU."""
    layers = mem.layer_weights
    on_gpu = sum(layers[len(layers) - gpu_layers :]) if gpu_layers else 0
    on_cpu = sum(layers) - on_gpu + mem.other_bytes
    if full:
        on_gpu += mem.output_bytes
    else:
        on_cpu += mem.output_bytes
    return float(on_cpu), float(on_gpu)


def estimate_speed(est: FitEstimate, bandwidth: Bandwidth, active: float = 1.0) -> float | None:
    """Tokens per second for a load placed as ``est`` says; None when it won't fit."""
    if est.verdict is FitVerdict.WONT_FIT:
        return None
    full = est.verdict is FitVerdict.FULL_GPU
    ram, gpu = _read_per_token(est.memory, est.gpu_layers, full)
    return tokens_per_second(ram * active, gpu * active, bandwidth)


def speed_for_layers(
    mem: MemoryBreakdown, gpu_layers: int, bandwidth: Bandwidth, active: float = 1.0
) -> float:
    """Tokens per second with the last ``gpu_layers`` layers on the GPU (the Load
    dialog's slider); all of them puts the output head there too."""
    n = mem.n_layers
    layers = max(0, min(gpu_layers, n))
    ram, gpu = _read_per_token(mem, layers, full=n > 0 and layers == n)
    return tokens_per_second(ram * active, gpu * active, bandwidth)


def speculation_ceiling(plain_tok_s: float, draft_tok_s: float, draft_max: int) -> float:
    """The most speculative decoding with a draft model can multiply ``plain_tok_s`` by.

    A step drafts up to ``draft_max`` (k) tokens, each costing a draft token's time,
    then the target checks them in one pass and keeps the agreeing ones plus one of its
    own. If every drafted token is accepted and checking k+1 tokens costs what one
    token does (decoding reads each weight once either way), a step yields k+1 tokens
    for ``1 + k * c`` target-token times, ``c`` being a draft token's time over the
    target's: ``(k + 1) / (1 + k * c)``, the all-accepted case of Leviathan et al.,
    "Fast Inference from Transformers via Speculative Decoding" (2023). An upper bound:
    on a CPU checking several tokens costs more than one, and rejected drafts add
    nothing. 1.0 when the draft is too slow to ever pay."""
    if plain_tok_s <= 0 or draft_tok_s <= 0:
        return 1.0
    k = max(1, draft_max)
    cost = plain_tok_s / draft_tok_s  # a draft token's time, in target-token times
    return max(1.0, (k + 1) / (1 + k * cost))


def estimate_speed_from_size(
    model_bytes: int, bandwidth: Bandwidth, *, on_gpu: float = 0.0, active: float = 1.0
) -> float:
    """Tokens per second from the file size alone (before the header is read), with the
    share ``on_gpu`` (0..1) of the weights in GPU memory."""
    read = model_bytes * active
    share = min(1.0, max(0.0, on_gpu))
    return tokens_per_second(read * (1 - share), read * share, bandwidth)


def format_speed(tok_s: float | None) -> str:
    """ "~24 tok/s", "~3.5 tok/s", "<1 tok/s"; "" for None."""
    if tok_s is None:
        return ""
    if tok_s < 1:
        return "<1 tok/s"
    if tok_s < 10:
        return f"~{tok_s:.1f} tok/s"
    return f"~{tok_s:,.0f} tok/s"


# --------------------------------------------------------------------------- by size


@dataclass(frozen=True)
class RoughFit:
    """Where a model of a known file size would go, before its header is read."""

    verdict: FitVerdict
    on_gpu: float  # share of the weights in GPU memory (0..1)
    need_bytes: int  # weights + KV cache + compute buffers
    room_bytes: int  # memory free for it (RAM, plus VRAM when offloading)

    @property
    def tight(self) -> bool:
        """Fits, but with under 15% to spare: other apps may push it out."""
        return self.verdict is not FitVerdict.WONT_FIT and self.need_bytes > 0.85 * self.room_bytes


def rough_fit(size_bytes: int, kv_bytes: int, system: SystemMemory) -> RoughFit:
    """Judge a model from its file size and KV cache alone (the same reserves as
    :func:`hearth.hardware.fit.estimate_fit`, without the per-tensor detail)."""
    need = size_bytes + kv_bytes + COMPUTE_OVERHEAD_BYTES
    ram, vram = system.usable_ram, system.usable_vram
    if vram and need <= vram:
        return RoughFit(FitVerdict.FULL_GPU, 1.0, need, vram)
    if system.unified_memory:  # one pool: beyond the GPU's share nothing is gained
        verdict = FitVerdict.CPU_ONLY if need <= ram else FitVerdict.WONT_FIT
        return RoughFit(verdict, 0.0, need, ram)
    if vram and need <= vram + ram:
        return RoughFit(FitVerdict.PARTIAL_GPU, vram / need, need, vram + ram)
    if need <= ram:
        return RoughFit(FitVerdict.CPU_ONLY, 0.0, need, ram)
    return RoughFit(FitVerdict.WONT_FIT, 0.0, need, vram + ram)
