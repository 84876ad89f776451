"""The decode-speed estimate: bandwidth measured, GPUs by name, bytes read per token."""

from __future__ import annotations

from dataclasses import replace

import gguf
import pytest

from hearth.hardware.fit import ContextPlan, FitVerdict, estimate_fit
from hearth.hardware.probe import GpuInfo, SystemMemory, apple_gpu
from hearth.hardware.speed import (
    DECODE_EFFICIENCY,
    GB,
    PER_TOKEN_OVERHEAD_S,
    UNKNOWN_GPU_BANDWIDTH,
    Bandwidth,
    active_fraction,
    estimate_speed,
    estimate_speed_from_size,
    format_speed,
    gpu_bandwidth,
    machine_bandwidth,
    measure_ram_bandwidth,
    speculation_ceiling,
    speed_for_layers,
    tokens_per_second,
)
from hearth.library.gguf_metadata import GgufMetadata, TensorInfo, tensor_nbytes

GIB = 1024**3
Q = gguf.GGMLQuantizationType


def tensor(name: str, shape: tuple[int, ...], qtype: Q) -> TensorInfo:
    n = 1
    for d in shape:
        n *= d
    return TensorInfo(name, shape, int(qtype), qtype.name, n, tensor_nbytes(qtype, shape) or 0, 0)


def llama3_8b(n_layer: int = 32) -> GgufMetadata:
    """The tensor shapes and types of Llama-3-8B Q4_K_M (no weights)."""
    d, ff, kv, vocab = 4096, 14336, 1024, 128256
    tensors = [
        tensor("token_embd.weight", (d, vocab), Q.Q4_K),
        tensor("output.weight", (d, vocab), Q.Q6_K),
        tensor("output_norm.weight", (d,), Q.F32),
    ]
    for i in range(n_layer):
        tensors += [
            tensor(f"blk.{i}.attn_q.weight", (d, d), Q.Q4_K),
            tensor(f"blk.{i}.attn_k.weight", (d, kv), Q.Q4_K),
            tensor(f"blk.{i}.attn_v.weight", (d, kv), Q.Q6_K),
            tensor(f"blk.{i}.attn_output.weight", (d, d), Q.Q4_K),
            tensor(f"blk.{i}.ffn_gate.weight", (d, ff), Q.Q4_K),
            tensor(f"blk.{i}.ffn_up.weight", (d, ff), Q.Q4_K),
            tensor(f"blk.{i}.ffn_down.weight", (ff, d), Q.Q6_K),
        ]
    return GgufMetadata(
        architecture="llama", name="Llama 3 8B", version=3,
        parameter_count=sum(t.n_elements for t in tensors), file_type=15,
        quantization="Q4_K_M", context_length=8192, embedding_length=d,
        feed_forward_length=ff, block_count=n_layer, head_count=32, head_count_kv=8,
        head_count_kv_per_layer=(), key_length=None, value_length=None, vocab_size=vocab,
        chat_template=None, fim_token_ids=None, tensors=tuple(tensors),
        data_offset=8 * 1024 * 1024, expected_size=0, file_size=None, split_count=1, kv={},
    )  # fmt: skip


META = llama3_8b()


def machine(ram_gib: float, *vram_gib: float) -> SystemMemory:
    gpus = tuple(
        GpuInfo(f"GPU {i}", int(v * GIB), int(v * GIB), "cuda") for i, v in enumerate(vram_gib)
    )
    return SystemMemory(int(ram_gib * 2 * GIB), int(ram_gib * GIB), 8, 16, gpus)


BW = Bandwidth(ram_bps=60 * GB, gpu_bps=1000 * GB)


def test_measured_bandwidth_is_a_real_rate() -> None:
    # 8 MiB per thread, two threads: a real copy, small enough for a busy CI machine.
    rate = measure_ram_bandwidth(threads=2, nbytes=8 * 1024 * 1024, repeats=2)
    assert 0.2 * GB < rate < 2000 * GB


def test_gpu_bandwidth_by_name_longest_match_first() -> None:
    def gpu(name: str) -> GpuInfo:
        return GpuInfo(name, 24 * GIB, 24 * GIB, "cuda")

    assert gpu_bandwidth(gpu("NVIDIA GeForce RTX 4090"), 50 * GB) == 1008 * GB
    assert gpu_bandwidth(gpu("NVIDIA GeForce RTX 4060 Ti"), 50 * GB) == 288 * GB
    assert gpu_bandwidth(gpu("NVIDIA A100-SXM4-80GB"), 50 * GB) == 1555 * GB
    assert gpu_bandwidth(gpu("NVIDIA A100 80GB PCIe"), 50 * GB) == 2039 * GB
    assert gpu_bandwidth(gpu("NVIDIA H200"), 50 * GB) == 4800 * GB
    assert gpu_bandwidth(gpu("Some Future GPU"), 50 * GB) == UNKNOWN_GPU_BANDWIDTH
    # Unified memory: the GPU reads the same RAM the benchmark measured.
    assert gpu_bandwidth(apple_gpu(32 * GIB, 20 * GIB), 100 * GB) == 100 * GB


def test_machine_bandwidth_takes_the_fastest_gpu() -> None:
    sysmem = SystemMemory(
        64 * GIB, 32 * GIB, 8, 16,
        (GpuInfo("RTX 3060", GIB, GIB, "cuda"), GpuInfo("RTX 4090", GIB, GIB, "cuda")),
    )  # fmt: skip
    assert machine_bandwidth(sysmem, 50 * GB).gpu_bps == 1008 * GB
    assert machine_bandwidth(machine(16), 50 * GB).gpu_bps is None


def test_tokens_per_second_is_bandwidth_over_bytes() -> None:
    def rate(seconds: float) -> float:  # raw seconds of memory reads per token
        return 1 / (seconds / DECODE_EFFICIENCY + PER_TOKEN_OVERHEAD_S)

    assert tokens_per_second(6 * GB, 0, BW) == pytest.approx(rate(0.1))
    # A split: the RAM part and the GPU part add up in time.
    both = tokens_per_second(3 * GB, 10 * GB, BW)
    assert both == pytest.approx(rate(3 / 60 + 10 / 1000))
    assert estimate_speed_from_size(6 * GB, BW) == pytest.approx(rate(0.1))
    assert estimate_speed_from_size(10 * GB, BW, on_gpu=1.0) == pytest.approx(rate(0.01))
    # A tiny model is capped by the fixed work per token, not by its bytes.
    assert 900 < estimate_speed_from_size(2 * 1024 * 1024, BW) < 1 / PER_TOKEN_OVERHEAD_S
    # A mixture of experts reads only its routed share.
    assert estimate_speed_from_size(12 * GB, BW, active=0.5) == pytest.approx(
        estimate_speed_from_size(6 * GB, BW)
    )


def test_speed_follows_the_fit_placement() -> None:
    plan = ContextPlan(n_ctx=4096)
    cpu = estimate_fit(META, plan, machine(32))
    full = estimate_fit(META, plan, machine(32, 24))
    part = estimate_fit(META, plan, machine(32, 3))
    assert (cpu.verdict, full.verdict, part.verdict) == (
        FitVerdict.CPU_ONLY, FitVerdict.FULL_GPU, FitVerdict.PARTIAL_GPU,
    )  # fmt: skip
    s_cpu, s_full, s_part = (estimate_speed(e, BW) for e in (cpu, full, part))
    assert s_cpu is not None and s_full is not None and s_part is not None
    assert s_cpu < s_part < s_full
    # CPU only: ~4.3 GB of Q4_K_M weights (no embeddings) read per token at 60 GB/s.
    read = META.tensor_bytes - sum(t.n_bytes for t in META.tensors if "token_embd" in t.name)
    assert s_cpu == pytest.approx(1 / (read / (60 * GB) / DECODE_EFFICIENCY + PER_TOKEN_OVERHEAD_S))
    assert 8 < s_cpu < 12
    # The Load dialog's slider: the same numbers by layer count.
    from hearth.hardware.speed import speed_for_layers

    assert speed_for_layers(full.memory, 32, BW) == pytest.approx(s_full)
    assert speed_for_layers(cpu.memory, 0, BW) == pytest.approx(s_cpu)
    assert speed_for_layers(part.memory, part.gpu_layers, BW) == pytest.approx(s_part)
    wont = estimate_fit(META, plan, machine(2))
    assert wont.verdict is FitVerdict.WONT_FIT and estimate_speed(wont, BW) is None


def test_active_fraction_of_a_mixture_of_experts() -> None:
    assert active_fraction(META) == 1.0
    d, ff, experts = 2048, 768, 128
    tensors = [tensor("token_embd.weight", (d, 1000), Q.Q8_0)]
    for i in range(4):
        tensors += [
            tensor(f"blk.{i}.attn_q.weight", (d, d), Q.Q8_0),
            tensor(f"blk.{i}.ffn_up_exps.weight", (d, ff, experts), Q.Q8_0),
        ]
    base = llama3_8b(4)
    moe = replace(
        base,
        architecture="qwen3moe",
        tensors=tuple(tensors),
        kv={"qwen3moe.expert_count": experts, "qwen3moe.expert_used_count": 8},
    )
    total = sum(t.n_bytes for t in tensors)
    exps = sum(t.n_bytes for t in tensors if "_exps." in t.name)
    assert active_fraction(moe) == pytest.approx((total - exps + exps * 8 / 128) / total)
    assert active_fraction(moe) < 0.2


def test_format_speed() -> None:
    assert format_speed(None) == ""
    assert format_speed(0.4) == "<1 tok/s"
    assert format_speed(3.46) == "~3.5 tok/s"
    assert format_speed(41.7) == "~42 tok/s"


def test_rough_fit_from_the_file_size() -> None:
    from hearth.hardware.speed import rough_fit

    five = 5 * GIB
    kv = 512 * 1024 * 1024
    assert rough_fit(five, kv, machine(32, 24)).verdict is FitVerdict.FULL_GPU
    part = rough_fit(five, kv, machine(32, 4))
    assert part.verdict is FitVerdict.PARTIAL_GPU and 0.5 < part.on_gpu < 1
    cpu = rough_fit(five, kv, machine(16))
    assert cpu.verdict is FitVerdict.CPU_ONLY and not cpu.tight
    assert rough_fit(five, kv, machine(6.5)).tight  # fits, with little to spare
    assert rough_fit(five, kv, machine(4)).verdict is FitVerdict.WONT_FIT
    mac = SystemMemory(16 * GIB, 12 * GIB, 8, 8, (apple_gpu(16 * GIB, 12 * GIB),))
    assert rough_fit(five, kv, mac).verdict is FitVerdict.FULL_GPU
    assert rough_fit(11 * GIB, kv, mac).verdict is FitVerdict.WONT_FIT


def test_guess_from_a_repo_name() -> None:
    from hearth.hub.picks import guess_from_name

    assert guess_from_name("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF") == (4_800_000_000, 1.0)
    size, active = guess_from_name("unsloth/Qwen3-30B-A3B-GGUF")
    assert size == 18_000_000_000 and active == pytest.approx(0.1)
    assert guess_from_name("HuggingFaceTB/SmolLM2-135M-Instruct-GGUF")[0] == 81_000_000
    assert guess_from_name("someone/mystery-model-GGUF") == (0, 1.0)


def test_the_speculation_ceiling_follows_the_two_models_costs() -> None:
    # a draft token at a quarter of the target's time, 4 drafted, all accepted: 5 tokens
    # for 1 + 4 * 0.25 = 2 target-token times
    assert speculation_ceiling(100.0, 400.0, 4) == pytest.approx(2.5)
    # a free draft gives k + 1 tokens per pass; a draft as slow as the target, nothing
    assert speculation_ceiling(100.0, 1e12, 8) == pytest.approx(9.0)
    assert speculation_ceiling(100.0, 100.0, 16) == 1.0
    assert speculation_ceiling(100.0, 50.0, 16) == 1.0  # slower than the target: never pays
    # more drafted tokens raise it, never past 1 / cost
    ceilings = [speculation_ceiling(100.0, 1000.0, k) for k in (1, 4, 16, 64)]
    assert ceilings == sorted(ceilings) and ceilings[-1] < 10.0


def test_a_small_draft_has_a_higher_ceiling_than_a_large_one() -> None:
    bw = Bandwidth(ram_bps=50 * GB)
    plan = ContextPlan(n_ctx=4096)
    target = estimate_fit(META, plan, SystemMemory(64 * GIB, 32 * GIB, 8, 16)).memory
    plain = speed_for_layers(target, 0, bw)

    def ceiling(n_layer: int) -> float:
        draft = estimate_fit(llama3_8b(n_layer), plan, SystemMemory(64 * GIB, 32 * GIB, 8, 16))
        return speculation_ceiling(plain, speed_for_layers(draft.memory, 0, bw), 16)

    assert ceiling(2) > ceiling(8) > ceiling(24) > 1.0
