"""Will this model fit? Memory llama.cpp will allocate, and where it can go.

The estimate follows what llama.cpp allocates when it loads a model and creates a
context, counted the way its own log lines report them:

- model buffers: every tensor's bytes (``blk.N.*`` per layer, plus embeddings/output);
- KV cache: ``cells * n_layer * (n_head_kv * k_len * bytes(K) + n_head_kv * v_len *
  bytes(V))``, where cells is the context per slot, padded to 256, times the slots;
- compute buffer: the largest set of activations live at once for one micro-batch
  (attention, feed-forward or output logits), which llama.cpp reserves up front;
- output buffer: one row of logits per slot.

Layers are offloaded to the GPU from the last one backwards, as llama.cpp does; the
output layer goes last, and only with it is the offload "full". The token embeddings
always stay in RAM.

A draft model (speculative decoding, ``draft=``) is loaded beside the target with the
same settings (``engine/speculative.load_draft_model``: context, slots, KV types and
``n_gpu_layers``); its weights, KV cache and buffers are counted on top, placed alike.

Which quantization of a model to download, judged with this estimate, is
``quant_choice.py``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from hearth.core.attention import auto_turns_flash_attention_off
from hearth.core.model_info import FlashAttention, LoadConfig
from hearth.core.quantization import kv_row_bytes
from hearth.core.units import format_bytes
from hearth.hardware.probe import SystemMemory
from hearth.library.gguf_metadata import GgufMetadata

KV_CELL_PAD = 256  # llama.cpp pads the per-sequence context to a multiple of this


class FitVerdict(str, Enum):
    FULL_GPU = "full GPU offload"
    PARTIAL_GPU = "partial GPU offload"
    CPU_ONLY = "CPU only"
    WONT_FIT = "won't fit"


_FLASH_FLAGS = {FlashAttention.AUTO: None, FlashAttention.ON: True, FlashAttention.OFF: False}


@dataclass(frozen=True)
class ContextPlan:
    """The context a model would be loaded with (the engine's LoadConfig knobs)."""

    n_ctx: int = 4096  # per slot
    n_slots: int = 1
    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    flash_attention: bool | None = None  # None: "auto", see hearth.core.attention
    n_batch: int = 2048
    n_ubatch: int = 512
    kv_unified: bool = False

    @classmethod
    def from_load_config(cls, config: LoadConfig, n_ctx_train: int = 0) -> ContextPlan:
        """The plan the engine would load ``config`` with, for a model trained on
        ``n_ctx_train`` tokens (0: unknown)."""
        return cls(
            n_ctx=config.context_for(n_ctx_train),
            n_slots=config.n_parallel,
            cache_type_k=config.cache_type_k,
            cache_type_v=config.cache_type_v,
            flash_attention=_FLASH_FLAGS[config.flash_attention],
            n_batch=config.n_batch,
            n_ubatch=config.n_ubatch,
            kv_unified=config.kv_unified,
        )


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes llama.cpp allocates for one model and context, before any GPU split."""

    layer_weights: tuple[int, ...]
    embedding_bytes: int  # token_embd: always in RAM
    output_bytes: int  # output head + final norm: on the GPU only with full offload
    other_bytes: int  # other non-layer tensors (rope factors, ...)
    kv_per_layer: int
    kv_cells: int
    compute_bytes: int  # the compute buffer, per device that runs layers
    logits_bytes: int  # llama.cpp's "output buffer"
    host_compute_bytes: int  # a GPU build's pinned host buffer (see estimate_memory)

    @property
    def n_layers(self) -> int:
        return len(self.layer_weights)

    @property
    def weights_bytes(self) -> int:
        return sum(self.layer_weights) + self.embedding_bytes + self.output_bytes + self.other_bytes

    @property
    def kv_cache_bytes(self) -> int:
        return self.kv_per_layer * self.n_layers

    @property
    def total_bytes(self) -> int:
        """All of it in one place: what a CPU-only load allocates."""
        return self.weights_bytes + self.kv_cache_bytes + self.compute_bytes + self.logits_bytes


@dataclass(frozen=True)
class FitEstimate:
    verdict: FitVerdict
    gpu_layers: int  # layers placed on the GPU (0..n_layers)
    n_layers: int
    n_gpu_layers: int  # the value for llama.cpp's n_gpu_layers (-1: everything)
    gpu_bytes: int
    ram_bytes: int
    free_vram: int
    available_ram: int
    memory: MemoryBreakdown
    summary: str
    draft_memory: MemoryBreakdown | None = None  # the draft model's, when one is counted


# --------------------------------------------------------------------------- memory


def _kv_heads(meta: GgufMetadata, n_layers: int) -> list[int]:
    if len(meta.head_count_kv_per_layer) == n_layers:
        return list(meta.head_count_kv_per_layer)
    heads = meta.head_count_kv or meta.head_count or 0
    return [heads] * n_layers


def estimate_memory(
    meta: GgufMetadata, plan: ContextPlan, *, weight_scale: float = 1.0, gpu_offload: bool = True
) -> MemoryBreakdown:
    """What llama.cpp allocates for ``meta`` with ``plan``; ``weight_scale`` resizes the
    weights (to judge another quantization of the same model from its file size).
    ``gpu_offload`` matters only for flash attention "auto", which is off on the CPU."""
    n_layers = meta.block_count or 0
    layers = [round(b * weight_scale) for b in meta.layer_bytes()]
    embedding = output = other = 0
    for tensor in meta.non_layer_tensors():
        size = round(tensor.n_bytes * weight_scale)
        if tensor.name.startswith("token_embd."):
            embedding += size
        elif tensor.name.startswith("output"):
            output += size
        else:
            other += size

    n_ctx_seq = -(-max(1, plan.n_ctx) // KV_CELL_PAD) * KV_CELL_PAD
    if plan.kv_unified:
        n_kv = -(-max(1, plan.n_ctx * plan.n_slots) // KV_CELL_PAD) * KV_CELL_PAD
        cells = n_kv
    else:
        n_kv = n_ctx_seq
        cells = n_ctx_seq * plan.n_slots

    n_embd = meta.embedding_length or 0
    n_head = meta.head_count or 0
    k_len = meta.key_length or (n_embd // n_head if n_head else 0)
    v_len = meta.value_length or (n_embd // n_head if n_head else 0)
    per_layer_kv = [
        cells
        * (kv_row_bytes(plan.cache_type_k, h * k_len) + kv_row_bytes(plan.cache_type_v, h * v_len))
        for h in _kv_heads(meta, n_layers)
    ]
    kv_per_layer = max(per_layer_kv, default=0)

    # Compute buffer: floats live per token of the worst-case micro-batch. Measured
    # against llama.cpp's "compute buffer size" lines: the KQ mask (f16 with flash
    # attention) plus the largest of attention, feed-forward and output-logits phases.
    tokens = min(plan.n_ubatch, plan.n_batch, max(1, plan.n_ctx * plan.n_slots))
    n_vocab = meta.vocab_size or 0
    n_ff = meta.feed_forward_length or 4 * n_embd
    flash = plan.flash_attention
    if flash is None:
        flash = not auto_turns_flash_attention_off(
            gpu_offload=gpu_offload,
            cache_type_v=plan.cache_type_v,
            n_ctx=plan.n_ctx,
            n_slots=plan.n_slots,
            kv_unified=plan.kv_unified,
            n_batch=plan.n_batch,
            n_ubatch=plan.n_ubatch,
            n_head=n_head,
        )
    mask = n_kv / 2 if flash else n_kv
    n_embd_kv = max(_kv_heads(meta, n_layers), default=0) * max(k_len, v_len)
    attention = 5 * n_embd + 2 * n_embd_kv + (0 if flash else n_head * n_kv)
    feed_forward = 4 * n_ff + n_embd
    logits = n_vocab + n_embd
    per_token = mask + max(attention, feed_forward, logits) + 8
    # A GPU build (CUDA, measured on an H200) replaces the CPU compute buffer with a
    # pinned host one, which holds the inputs, the KQ mask and the copies between
    # devices: within 0.5 MiB of llama.cpp's "CUDA_Host compute buffer" in every case
    # of tests/integration/test_fit_estimate.py.
    host_per_token = mask + 2 * n_embd
    return MemoryBreakdown(
        layer_weights=tuple(layers),
        embedding_bytes=embedding,
        output_bytes=output,
        other_bytes=other,
        kv_per_layer=kv_per_layer,
        kv_cells=cells,
        compute_bytes=int(tokens * 4 * per_token),
        logits_bytes=n_vocab * 4 * plan.n_slots,
        host_compute_bytes=int(tokens * 4 * host_per_token),
    )


# --------------------------------------------------------------------------- placement


def split_memory(
    mem: MemoryBreakdown, gpu_layers: int, full: bool, *, gpu_backend: bool
) -> tuple[int, int]:
    """(GPU bytes, RAM bytes) for llama.cpp's ``n_gpu_layers`` = ``gpu_layers``.

    llama.cpp counts the output layer as the last layer and offloads it first: 1 puts
    the output head on the GPU, k the head and the last k - 1 blocks, and above the
    block count (or with ``full``, its -1) everything.

    ``gpu_backend``: llama.cpp can use a GPU here. Then the compute buffer is on the GPU
    whatever ``gpu_layers`` is, even 0 (llama.cpp runs a big batch's matrix products
    there, the weights copied over), and RAM holds only the pinned host buffer; without
    one, everything is in RAM (measured on CUDA: docs/benchmarks.md, "The fit estimate
    on a CUDA build")."""
    n = mem.n_layers
    if gpu_layers <= 0 and not full:
        if not gpu_backend:
            return 0, mem.total_bytes
        ram = mem.total_bytes - mem.compute_bytes + mem.host_compute_bytes
        return mem.compute_bytes, ram
    blocks = n if full or gpu_layers > n else gpu_layers - 1
    on_gpu = mem.layer_weights[n - blocks :] if blocks else ()
    gpu = sum(on_gpu) + blocks * mem.kv_per_layer + mem.output_bytes + mem.compute_bytes
    cpu_weights = sum(mem.layer_weights) - sum(on_gpu) + mem.embedding_bytes + mem.other_bytes
    cpu = cpu_weights + (n - blocks) * mem.kv_per_layer + mem.logits_bytes
    return gpu, cpu + mem.host_compute_bytes


def draft_split(
    draft: MemoryBreakdown, gpu_layers: int, full: bool, *, gpu_backend: bool
) -> tuple[int, int]:
    """(GPU bytes, RAM bytes) of a draft model given the target's ``n_gpu_layers``,
    which llama.cpp applies to the draft as it is: -1 (``full``) all of it, else the
    draft's output head and its last ``gpu_layers - 1`` blocks."""
    return split_memory(draft, gpu_layers, full, gpu_backend=gpu_backend)


def projector_split(
    size: int, gpu_layers: int, full: bool, *, gpu_backend: bool
) -> tuple[int, int]:
    """(GPU bytes, RAM bytes) of a vision projector of ``size`` bytes (its weights,
    about its file) loaded beside a model with ``n_gpu_layers`` = ``gpu_layers``: the
    engine puts it on the GPU unless the model is kept off it (``engine/vision.py``)."""
    on_gpu = gpu_backend and (full or gpu_layers != 0)
    return (size, 0) if on_gpu else (0, size)


def estimate_fit(
    meta: GgufMetadata,
    plan: ContextPlan,
    system: SystemMemory,
    *,
    weight_scale: float = 1.0,
    draft: GgufMetadata | None = None,
    draft_name: str = "",
    projector_bytes: int = 0,
) -> FitEstimate:
    """Decide where the model goes: all on the GPU, split, CPU only, or nowhere.

    ``draft``: the header of a draft model loaded beside it (speculative decoding),
    whose memory counts too, placed as the target is (see ``draft_split``); the
    summary names it ``draft_name``, so a fit chip's tooltip says what it counted.
    ``projector_bytes``: a vision projector loaded with it (``projector_split``)."""
    mem = estimate_memory(meta, plan, weight_scale=weight_scale)
    draft_mem = estimate_memory(draft, plan) if draft is not None else None
    ram, vram = system.usable_ram, system.usable_vram
    unified = system.unified_memory
    n = mem.n_layers

    def fits(gpu: int, cpu: int) -> bool:
        if unified:  # one pool: the GPU's share is capped, both come out of RAM
            return gpu <= vram and gpu + cpu <= ram
        return gpu <= vram and cpu <= ram

    def split(layers: int, full: bool, memory: MemoryBreakdown = mem) -> tuple[int, int]:
        gpu, cpu = split_memory(memory, layers, full, gpu_backend=bool(system.gpus))
        if draft_mem is not None:
            dgpu, dcpu = draft_split(draft_mem, layers, full, gpu_backend=bool(system.gpus))
            gpu, cpu = gpu + dgpu, cpu + dcpu
        pgpu, pcpu = projector_split(projector_bytes, layers, full, gpu_backend=bool(system.gpus))
        return gpu + pgpu, cpu + pcpu

    def result(
        verdict: FitVerdict, layers: int, full: bool, summary: str, memory: MemoryBreakdown = mem
    ) -> FitEstimate:
        gpu, cpu = split(layers, full, memory)
        if draft_mem is not None:  # the draft as this placement counts it (CPU or GPU)
            named = f"{draft_name} " if draft_name else ""
            summary += (
                f" This includes the draft model {named}({format_bytes(draft_mem.total_bytes)})."
            )
        return FitEstimate(
            verdict=verdict,
            gpu_layers=layers,
            n_layers=n,
            n_gpu_layers=-1 if full else layers,
            gpu_bytes=gpu,
            ram_bytes=cpu,
            free_vram=vram,
            available_ram=ram,
            memory=memory,
            summary=summary,
            draft_memory=draft_mem,
        )

    if system.gpus and n > 0:
        gpu, cpu = split(n, True)
        if fits(gpu, cpu):
            return result(
                FitVerdict.FULL_GPU,
                n,
                True,
                f"Full GPU offload: {format_bytes(gpu)} of GPU memory "
                f"({format_bytes(vram)} free) and {format_bytes(cpu)} of RAM "
                f"({format_bytes(ram)} available).",
            )
        for layers in range(n, 0, -1):
            gpu, cpu = split(layers, False)
            if gpu <= vram:
                if fits(gpu, cpu):
                    return result(
                        FitVerdict.PARTIAL_GPU,
                        layers,
                        False,
                        f"{layers} of {n} layers on GPU: {format_bytes(gpu)} of GPU memory "
                        f"({format_bytes(vram)} free) plus {format_bytes(cpu)} of RAM "
                        f"({format_bytes(ram)} available). "
                        "Generation is slower than with full offload.",
                    )
                break  # fewer GPU layers only need more RAM

    mem = estimate_memory(meta, plan, weight_scale=weight_scale, gpu_offload=False)
    if draft is not None:
        draft_mem = estimate_memory(draft, plan, gpu_offload=False)
    total = mem.total_bytes + (draft_mem.total_bytes if draft_mem is not None else 0)
    total += projector_bytes
    if total <= ram:
        return result(
            FitVerdict.CPU_ONLY,
            0,
            False,
            f"CPU only: {format_bytes(total)} of RAM ({format_bytes(ram)} available)"
            + (", no GPU memory to spare." if system.gpus else ", no usable GPU."),
            mem,
        )
    return result(
        FitVerdict.WONT_FIT,
        0,
        False,
        f"Won't fit: needs {format_bytes(total)} (weights {format_bytes(mem.weights_bytes)}, "
        f"KV cache {format_bytes(mem.kv_cache_bytes)}"
        + (", and the draft model" if draft_mem is not None else "")
        + f"), but only {format_bytes(ram)} of RAM"
        + (f" and {format_bytes(vram)} of GPU memory are" if system.gpus else " is")
        + " free. Pick a smaller quantization or a shorter context.",
        mem,
    )
