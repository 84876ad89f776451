"""The fit estimator: KV-cache arithmetic, placement verdicts and quant suggestions.

Uses the header of a Llama-3-8B-shaped Q4_K_M model (the real tensor shapes and types,
no weights) and made-up machines; the comparison with what llama.cpp really allocates
is in tests/integration/test_fit_estimate.py.
"""

from __future__ import annotations

from dataclasses import replace

import gguf
import pytest

from hearth.core.units import format_bytes
from hearth.hardware.fit import (
    ContextPlan,
    FitVerdict,
    estimate_fit,
    estimate_memory,
    projector_split,
)
from hearth.hardware.probe import CUDA_RESERVE_BYTES, GpuInfo, SystemMemory, apple_gpu
from hearth.hardware.quant_choice import QuantCandidate, rank_quantizations, suggest_quantization
from hearth.library.gguf_metadata import GgufMetadata, TensorInfo, tensor_nbytes

GIB = 1024**3
MIB = 1024**2
Q = gguf.GGMLQuantizationType


def tensor(name: str, shape: tuple[int, ...], qtype: Q, offset: int = 0) -> TensorInfo:
    n = 1
    for d in shape:
        n *= d
    return TensorInfo(
        name, shape, int(qtype), qtype.name, n, tensor_nbytes(qtype, shape) or 0, offset
    )


def llama3_8b(n_layer: int = 32) -> GgufMetadata:
    d, ff, kv, vocab = 4096, 14336, 1024, 128256
    tensors = [
        tensor("token_embd.weight", (d, vocab), Q.Q4_K),
        tensor("output.weight", (d, vocab), Q.Q6_K),
        tensor("output_norm.weight", (d,), Q.F32),
    ]
    for i in range(n_layer):
        tensors += [
            tensor(f"blk.{i}.attn_norm.weight", (d,), Q.F32),
            tensor(f"blk.{i}.attn_q.weight", (d, d), Q.Q4_K),
            tensor(f"blk.{i}.attn_k.weight", (d, kv), Q.Q4_K),
            tensor(f"blk.{i}.attn_v.weight", (d, kv), Q.Q6_K),
            tensor(f"blk.{i}.attn_output.weight", (d, d), Q.Q4_K),
            tensor(f"blk.{i}.ffn_norm.weight", (d,), Q.F32),
            tensor(f"blk.{i}.ffn_gate.weight", (d, ff), Q.Q4_K),
            tensor(f"blk.{i}.ffn_up.weight", (d, ff), Q.Q4_K),
            tensor(f"blk.{i}.ffn_down.weight", (ff, d), Q.Q6_K),
        ]
    return GgufMetadata(
        architecture="llama",
        name="Meta Llama 3 8B Instruct",
        version=3,
        parameter_count=sum(t.n_elements for t in tensors),
        file_type=15,
        quantization="Q4_K_M",
        context_length=8192,
        embedding_length=d,
        feed_forward_length=ff,
        block_count=n_layer,
        head_count=32,
        head_count_kv=8,
        head_count_kv_per_layer=(),
        key_length=None,
        value_length=None,
        vocab_size=vocab,
        chat_template="{{ x }}",
        fim_token_ids=None,
        tensors=tuple(tensors),
        data_offset=8 * MIB,
        expected_size=0,
        file_size=None,
        split_count=1,
        kv={},
    )


META = llama3_8b()


def machine(ram_gib: float, *vram_gib: float) -> SystemMemory:
    gpus = tuple(
        GpuInfo(f"GPU {i}", int(v * GIB), int(v * GIB), "cuda") for i, v in enumerate(vram_gib)
    )
    return SystemMemory(int(ram_gib * 2 * GIB), int(ram_gib * GIB), 8, 16, gpus)


# --------------------------------------------------------------------------- memory


def test_plan_from_the_engine_load_config() -> None:
    from pathlib import Path

    from hearth.core.model_info import FlashAttention, LoadConfig

    cfg = LoadConfig(model_path=Path("m.gguf"), n_ctx=2048, n_parallel=3, cache_type_v="q8_0")
    plan = ContextPlan.from_load_config(cfg)
    assert (plan.n_ctx, plan.n_slots, plan.cache_type_k, plan.cache_type_v) == (
        2048,
        3,
        "f16",
        "q8_0",
    )
    assert plan.flash_attention is None  # auto: decided per device, see core/attention.py
    off = LoadConfig(model_path=Path("m.gguf"), flash_attention=FlashAttention.OFF)
    assert ContextPlan.from_load_config(off).flash_attention is False
    on = LoadConfig(model_path=Path("m.gguf"), flash_attention=FlashAttention.ON)
    assert ContextPlan.from_load_config(on).flash_attention is True


def test_flash_attention_auto_is_off_on_the_cpu_while_the_score_buffer_is_small() -> None:
    # Llama-3-8B, 32 heads: at 8192 tokens the non-flash score buffer is 512 MiB.
    cpu = estimate_memory(META, ContextPlan(n_ctx=8192), gpu_offload=False)
    gpu = estimate_memory(META, ContextPlan(n_ctx=8192), gpu_offload=True)
    forced_off = estimate_memory(META, ContextPlan(n_ctx=8192, flash_attention=False))
    assert cpu.compute_bytes == forced_off.compute_bytes > gpu.compute_bytes
    long_cpu = estimate_memory(META, ContextPlan(n_ctx=16384), gpu_offload=False)
    long_on = estimate_memory(META, ContextPlan(n_ctx=16384, flash_attention=True))
    assert long_cpu.compute_bytes == long_on.compute_bytes  # too big a buffer: stays on
    quantized_v = ContextPlan(n_ctx=4096, cache_type_v="q8_0")
    assert (  # a quantized V cache needs flash attention
        estimate_memory(META, quantized_v, gpu_offload=False).compute_bytes
        == estimate_memory(META, quantized_v, gpu_offload=True).compute_bytes
    )


def test_weights_are_the_tensor_sizes() -> None:
    mem = estimate_memory(META, ContextPlan())
    assert mem.weights_bytes == META.tensor_bytes
    assert 4.5 * GIB < mem.weights_bytes < 5 * GIB  # Llama-3-8B Q4_K_M: 4.58 GiB
    assert mem.n_layers == 32 and len(set(mem.layer_weights)) == 1


def test_kv_cache_counts_kv_heads_not_query_heads() -> None:
    # Llama-3-8B at 8192 tokens in f16: 32 layers * 8192 * (8*128 + 8*128) * 2 B = 1 GiB.
    mem = estimate_memory(META, ContextPlan(n_ctx=8192))
    assert mem.kv_cache_bytes == 1 * GIB and mem.kv_cells == 8192
    # Four slots of 2048 hold the same cells.
    assert estimate_memory(META, ContextPlan(n_ctx=2048, n_slots=4)).kv_cache_bytes == GIB
    # Quantized caches: q8_0 is 34 bytes per 32 values, q4_0 18 (f16: 64).
    q8 = estimate_memory(META, ContextPlan(n_ctx=8192, cache_type_k="q8_0", cache_type_v="q8_0"))
    assert q8.kv_cache_bytes == GIB * 34 // 64
    mixed = estimate_memory(META, ContextPlan(n_ctx=8192, cache_type_v="q4_0"))
    assert mixed.kv_cache_bytes == GIB // 2 + GIB // 2 * 18 // 64


def test_kv_uses_key_and_value_length_and_pads_cells() -> None:
    meta = replace(META, key_length=192, value_length=128)
    mem = estimate_memory(meta, ContextPlan(n_ctx=1000))  # padded to 1024 cells
    assert mem.kv_cells == 1024
    assert mem.kv_per_layer == 1024 * (8 * 192 * 2 + 8 * 128 * 2)
    with pytest.raises(ValueError, match="unknown KV cache type 'q3_k'"):
        estimate_memory(meta, ContextPlan(n_ctx=1000, cache_type_k="q3_k"))


def test_compute_buffer_grows_with_context_without_flash_attention() -> None:
    fa = estimate_memory(META, ContextPlan(n_ctx=8192))
    no_fa = estimate_memory(META, ContextPlan(n_ctx=8192, flash_attention=False))
    assert 200 * MIB < fa.compute_bytes < 300 * MIB  # logits of a 512-token batch dominate
    assert no_fa.compute_bytes > 2 * fa.compute_bytes  # KQ: 32 heads x 8192 x 512 floats


# --------------------------------------------------------------------------- verdicts


def test_full_gpu_offload() -> None:
    est = estimate_fit(META, ContextPlan(n_ctx=8192), machine(32, 24))
    assert est.verdict is FitVerdict.FULL_GPU and est.n_gpu_layers == -1
    assert est.gpu_layers == est.n_layers == 32
    mem = est.memory
    assert est.gpu_bytes > mem.weights_bytes - mem.embedding_bytes + mem.kv_cache_bytes
    assert est.free_vram == 24 * GIB - CUDA_RESERVE_BYTES
    assert est.summary.startswith("Full GPU offload") and "GiB" in est.summary


def test_partial_offload_names_the_layers() -> None:
    est = estimate_fit(META, ContextPlan(n_ctx=8192), machine(32, 4))
    assert est.verdict is FitVerdict.PARTIAL_GPU
    assert 0 < est.gpu_layers < 32 and est.n_gpu_layers == est.gpu_layers
    assert est.gpu_bytes <= est.free_vram
    assert f"{est.gpu_layers} of 32 layers on GPU" in est.summary
    bigger = estimate_fit(META, ContextPlan(n_ctx=8192), machine(32, 5))
    assert bigger.gpu_layers > est.gpu_layers
    longer = estimate_fit(META, ContextPlan(n_ctx=32768), machine(32, 4))
    assert longer.gpu_layers < est.gpu_layers  # the KV cache takes GPU room too
    two = estimate_fit(META, ContextPlan(n_ctx=8192), machine(32, 3, 3))
    assert two.free_vram == 6 * GIB - 2 * CUDA_RESERVE_BYTES


def test_cpu_only_and_wont_fit() -> None:
    est = estimate_fit(META, ContextPlan(n_ctx=4096), machine(16))
    assert est.verdict is FitVerdict.CPU_ONLY and est.gpu_bytes == 0
    assert est.ram_bytes == est.memory.total_bytes and "no usable GPU" in est.summary
    tiny_gpu = estimate_fit(META, ContextPlan(n_ctx=4096), machine(16, 0.5))
    assert tiny_gpu.verdict is FitVerdict.CPU_ONLY
    nope = estimate_fit(META, ContextPlan(n_ctx=4096), machine(4))
    assert nope.verdict is FitVerdict.WONT_FIT and nope.summary.startswith("Won't fit")
    assert "smaller quantization" in nope.summary
    # The GPU takes layers, but what stays behind is still too much for RAM.
    split_short = estimate_fit(META, ContextPlan(n_ctx=4096), machine(1, 2))
    assert split_short.verdict is FitVerdict.WONT_FIT


def test_apple_unified_memory_counts_once() -> None:
    def mac(ram_gib: int) -> SystemMemory:
        total = ram_gib * GIB
        return SystemMemory(total, int(total * 0.8), 8, 8, (apple_gpu(total, int(total * 0.8)),))

    assert estimate_fit(META, ContextPlan(n_ctx=8192), mac(16)).verdict is FitVerdict.FULL_GPU
    small = estimate_fit(META, ContextPlan(n_ctx=8192), mac(8))
    assert small.verdict is not FitVerdict.FULL_GPU  # 8 GB Macs give the GPU ~5.4 GB


# --------------------------------------------------------------------------- quants

REPO = [
    QuantCandidate("Q8_0", 8_540_000_000),
    QuantCandidate("Q6_K", 6_600_000_000),
    QuantCandidate("Q5_K_M", 5_730_000_000),
    QuantCandidate("Q4_K_M", 4_920_000_000),
    QuantCandidate("Q3_K_M", 4_020_000_000),
    QuantCandidate("Q2_K", 3_180_000_000),
]


def test_suggests_the_largest_quant_that_runs_on_the_gpu() -> None:
    plan = ContextPlan(n_ctx=8192)
    pick = suggest_quantization(META, REPO, plan, machine(32, 8))
    assert pick is not None and pick.estimate.verdict is FitVerdict.FULL_GPU
    labels = [c.label for c, _ in pick.ranked]
    assert labels == [c.label for c in REPO]
    larger = labels[: labels.index(pick.candidate.label)]
    assert larger and all(
        est.verdict is not FitVerdict.FULL_GPU for c, est in pick.ranked if c.label in larger
    )
    same = next(est for c, est in pick.ranked if c.label == "Q4_K_M")
    direct = estimate_fit(
        META, plan, machine(32, 8), weight_scale=(4_920_000_000 - 8 * MIB) / META.tensor_bytes
    )
    assert same == direct


def test_without_gpu_suggests_the_largest_that_fits_in_ram() -> None:
    pick = suggest_quantization(META, REPO, ContextPlan(n_ctx=4096), machine(7))
    assert pick is not None and pick.candidate.label == "Q5_K_M"
    assert pick.estimate.verdict is FitVerdict.CPU_ONLY
    assert suggest_quantization(META, REPO, ContextPlan(), machine(2)) is None
    ranked = rank_quantizations(META, REPO, ContextPlan(), machine(2))
    assert all(est.verdict is FitVerdict.WONT_FIT for _, est in ranked)


# --------------------------------------------------------------------------- draft model

DRAFT = llama3_8b(n_layer=4)  # a small draft: the same vocabulary, an eighth of the blocks


def test_the_draft_models_weights_and_kv_cache_count() -> None:
    plan = ContextPlan(n_ctx=8192, n_slots=2)
    alone = estimate_fit(META, plan, machine(64))
    both = estimate_fit(META, plan, machine(64), draft=DRAFT)
    draft_mem = estimate_memory(DRAFT, plan, gpu_offload=False)
    assert both.draft_memory is not None
    # the draft has its own context as long as the target's: its KV cache is counted
    assert both.draft_memory.kv_cache_bytes == draft_mem.kv_cache_bytes > 0
    assert both.draft_memory.kv_cache_bytes == estimate_memory(META, plan).kv_per_layer * 4
    assert both.ram_bytes == alone.ram_bytes + draft_mem.total_bytes
    assert "draft model" in both.summary and "draft model" not in alone.summary


def test_the_draft_follows_a_full_offload_onto_the_gpu() -> None:
    plan = ContextPlan(n_ctx=4096)
    alone = estimate_fit(META, plan, machine(64, 24))
    both = estimate_fit(META, plan, machine(64, 24), draft=DRAFT)
    assert alone.verdict is both.verdict is FitVerdict.FULL_GPU
    draft_mem = both.draft_memory
    assert draft_mem is not None
    # all of the draft's weights and KV cache on the GPU too, beside the target's
    added_gpu = both.gpu_bytes - alone.gpu_bytes
    assert added_gpu >= draft_mem.weights_bytes - draft_mem.embedding_bytes
    assert added_gpu >= draft_mem.kv_cache_bytes


def test_a_draft_that_no_longer_fits_on_the_gpu_lowers_the_verdict() -> None:
    plan = ContextPlan(n_ctx=4096)
    alone = estimate_fit(META, plan, machine(64, 24))
    gpu_need = alone.gpu_bytes + CUDA_RESERVE_BYTES
    # a GPU with just enough room for the target alone
    tight = machine(64, (gpu_need + 64 * MIB) / GIB)
    assert estimate_fit(META, plan, tight).verdict is FitVerdict.FULL_GPU
    with_draft = estimate_fit(META, plan, tight, draft=DRAFT)
    assert with_draft.verdict is FitVerdict.PARTIAL_GPU
    assert with_draft.gpu_bytes <= with_draft.free_vram


def test_with_a_partial_offload_the_draft_gets_the_same_layer_count() -> None:
    from hearth.hardware.fit import draft_split

    mem = estimate_memory(DRAFT, ContextPlan())
    # n_gpu_layers 3 covers the draft's output layer and its last 2 of 4 blocks, as
    # llama.cpp counts (the output layer is offloaded first)
    gpu3, ram3 = draft_split(mem, 3, full=False, gpu_backend=True)
    assert gpu3 >= sum(mem.layer_weights[2:]) + mem.output_bytes
    assert ram3 >= sum(mem.layer_weights[:2]) + mem.embedding_bytes
    # n_gpu_layers 10 covers all 4 blocks and, being above its count, the output too
    gpu10, _ = draft_split(mem, 10, full=False, gpu_backend=True)
    assert gpu10 >= sum(mem.layer_weights) + mem.output_bytes
    assert draft_split(mem, 0, full=False, gpu_backend=False) == (0, mem.total_bytes)
    # a GPU build keeps its compute buffer on the GPU even with no layers there
    gpu0, ram0 = draft_split(mem, 0, full=False, gpu_backend=True)
    assert gpu0 == mem.compute_bytes
    assert ram0 == mem.total_bytes - mem.compute_bytes + mem.host_compute_bytes


def test_the_suggested_quant_leaves_room_for_the_draft_it_is_named_in_the_summary() -> None:
    plan = ContextPlan(n_ctx=8192)
    alone = suggest_quantization(META, REPO, plan, machine(32, 8))
    beside = suggest_quantization(META, REPO, plan, machine(32, 8), draft=DRAFT)
    assert alone is not None and beside is not None
    assert beside.estimate.verdict is FitVerdict.FULL_GPU
    labels = [c.label for c in REPO]
    # the draft takes GPU memory too, so the largest quant that fits beside it is smaller
    assert labels.index(beside.candidate.label) > labels.index(alone.candidate.label)
    assert all(est.draft_memory is not None for _, est in beside.ranked)
    named = estimate_fit(META, plan, machine(64), draft=DRAFT, draft_name="llama-0.5b")
    assert named.verdict is FitVerdict.CPU_ONLY and named.draft_memory is not None
    # the size named is the draft as this placement counts it (on the CPU: its CPU buffers)
    size = format_bytes(named.draft_memory.total_bytes)
    assert f"This includes the draft model llama-0.5b ({size})." in named.summary
    assert named.draft_memory == estimate_memory(DRAFT, plan, gpu_offload=False)


def test_a_vision_projector_goes_where_the_engine_puts_it() -> None:
    """On the GPU beside an offloaded model, in RAM for a CPU load; a projector that no
    longer fits beside the model lowers the verdict."""
    plan = ContextPlan(n_ctx=4096)
    proj = 850 * MIB
    alone = estimate_fit(META, plan, machine(64, 24))
    seeing = estimate_fit(META, plan, machine(64, 24), projector_bytes=proj)
    assert seeing.verdict is FitVerdict.FULL_GPU
    assert (seeing.gpu_bytes, seeing.ram_bytes) == (alone.gpu_bytes + proj, alone.ram_bytes)
    cpu_alone = estimate_fit(META, plan, machine(64))
    cpu = estimate_fit(META, plan, machine(64), projector_bytes=proj)
    assert cpu.ram_bytes == cpu_alone.ram_bytes + proj and cpu.gpu_bytes == 0
    assert projector_split(proj, 0, False, gpu_backend=True) == (0, proj)  # kept off the GPU
    tight = machine(64, (alone.gpu_bytes + CUDA_RESERVE_BYTES + 64 * MIB) / GIB)
    assert estimate_fit(META, plan, tight).verdict is FitVerdict.FULL_GPU
    assert estimate_fit(META, plan, tight, projector_bytes=proj).verdict is not FitVerdict.FULL_GPU
