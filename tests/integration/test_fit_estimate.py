"""The fit estimate is within 10% of the memory llama.cpp reports when it really loads.

Each case loads a synthesized model through Hearth's engine (``LlamaModel``) in a child
process with llama.cpp's log captured, and compares the estimate with what llama.cpp
allocated: ``llama_model_size`` (the weights) plus the KV, compute and output buffers
from its "... buffer size = X MiB" log lines. The model is larger than the tiny test
model (6 layers, 512 wide) so that weights, not fixed overheads, carry most of it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gguf_factory as gf
from hearth.hardware.fit import ContextPlan, estimate_memory, split_memory
from hearth.library.gguf_metadata import read_metadata

MIB = 1024 * 1024
SPEC = gf.TinyLlamaSpec(n_embd=512, n_ff=1536, n_layer=6, n_head=8, n_head_kv=2)

LOAD = textwrap.dedent(
    """
    import json, logging, sys
    from pathlib import Path
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    from hearth.core.model_info import FlashAttention, LoadConfig
    from hearth.engine.model import LlamaModel
    path, n_ctx, slots, cache, fa, unified = sys.argv[1:7]
    model = LlamaModel(LoadConfig(
        model_path=Path(path), n_ctx=int(n_ctx), n_parallel=int(slots), n_gpu_layers=0,
        cache_type_k=cache, cache_type_v=cache, flash_attention=FlashAttention(fa),
        kv_unified=unified == "1"))
    sys.stdout.write(json.dumps({"model_size": model.info("m").size_bytes}))
    model.close()
    """
)
BUFFER = re.compile(r"(\S+)\s+(model|KV|compute|output) buffer size =\s+([\d.]+) MiB")


@pytest.fixture(scope="module")
def fit_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("fit-models")
    f16 = gf.write_tiny_llama(folder / "fit-F16.gguf", spec=SPEC, seed=3)
    return {
        "F16": f16,
        "Q8_0": gf.quantize(f16, folder / "fit-Q8_0.gguf", "Q8_0"),
        "Q4_K_M": gf.quantize(f16, folder / "fit-Q4_K_M.gguf", "Q4_K_M"),
    }


def llama_cpp_reports(path: Path, plan: ContextPlan, fa: str) -> tuple[dict[str, float], bool]:
    """Bytes llama.cpp allocated, by kind, from a real load in a child process, and
    whether this llama.cpp has a GPU backend (a buffer on a device other than the CPU:
    then the compute buffer is on the GPU even with no layers there)."""
    args = [str(path), str(plan.n_ctx), str(plan.n_slots), plan.cache_type_k, fa]
    args.append("1" if plan.kv_unified else "0")
    proc = subprocess.run(
        [sys.executable, "-c", LOAD, *args], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    found: dict[str, float] = {}
    gpu_build = False
    for device, kind, mib in BUFFER.findall(proc.stderr):
        found[kind] = found.get(kind, 0.0) + float(mib) * MIB
        gpu_build = gpu_build or not device.startswith("CPU")
    assert {"model", "KV", "compute", "output"} <= set(found), proc.stderr[-3000:]
    # Repacked CPU weights are listed twice (mapped + repacked copy): take the model's
    # own size for the weights, which llama.cpp reports exactly.
    found["model"] = float(json.loads(proc.stdout)["model_size"])
    return found, gpu_build


CASES = [
    # quant, n_ctx per slot, slots, KV type, flash attention (auto is on for CPU), unified
    ("F16", 512, 4, "f16", "auto", False),
    ("Q8_0", 2048, 1, "q8_0", "on", False),
    ("Q4_K_M", 1024, 2, "f16", "off", False),
    ("Q4_K_M", 700, 3, "q4_0", "auto", True),
]


@pytest.mark.parametrize(("quant", "n_ctx", "slots", "cache", "fa", "unified"), CASES)
def test_estimate_within_ten_percent_of_llama_cpp(
    fit_models: dict[str, Path],
    quant: str,
    n_ctx: int,
    slots: int,
    cache: str,
    fa: str,
    unified: bool,
) -> None:
    path = fit_models[quant]
    plan = ContextPlan(
        n_ctx=n_ctx,
        n_slots=slots,
        cache_type_k=cache,
        cache_type_v=cache,
        flash_attention=fa != "off",
        kv_unified=unified,
    )
    real, gpu_build = llama_cpp_reports(path, plan, fa)
    est = estimate_memory(read_metadata(path), plan)
    gpu, ram = split_memory(est, 0, False, gpu_backend=gpu_build)  # the child's n_gpu_layers
    compute = est.compute_bytes + (est.host_compute_bytes if gpu_build else 0)

    assert est.weights_bytes == real["model"]  # the tensor table is the truth
    assert abs(est.kv_cache_bytes - real["KV"]) <= 0.01 * MIB  # log rounds to 0.01 MiB
    total_real = sum(real.values())
    error = (gpu + ram - total_real) / total_real
    print(  # visible with -s; the report quotes these
        f"\n{quant} ctx={n_ctx}x{slots} kv={cache} fa={fa} unified={unified}: estimate "
        f"{(gpu + ram) / MIB:.2f} MiB, llama.cpp {total_real / MIB:.2f} MiB "
        f"(weights {real['model'] / MIB:.2f}, KV {real['KV'] / MIB:.2f}, compute "
        f"{real['compute'] / MIB:.2f}, output {real['output'] / MIB:.2f}); error {error:+.2%}"
    )
    assert abs(error) < 0.10
    assert abs(compute - real["compute"]) < 0.25 * real["compute"]


# What a CUDA build of the same llama.cpp allocated for the same models and plans, on an
# NVIDIA H200 (docs/benchmarks.md, "The fit estimate on a CUDA build"): (GPU MiB, RAM
# MiB) by n_gpu_layers, from its buffer lines (CUDA0 model + KV + compute on the GPU;
# CPU_Mapped, CPU KV, the output and the CUDA_Host compute buffer in RAM). No GPU runs
# here: this keeps the GPU side of the split honest on every machine.
CUDA_MEASURED = {
    CASES[0]: {0: (15.00, 45.04), 3: (29.00, 30.53), 99: (53.53, 3.02)},
    CASES[1]: {0: (15.28, 26.11), 3: (22.72, 18.66), 99: (35.85, 4.30)},
    CASES[2]: {0: (22.14, 21.00), 3: (28.80, 15.34), 99: (38.86, 4.65)},
    CASES[3]: {0: (15.44, 16.70), 3: (19.73, 12.41), 99: (26.57, 4.45)},
}


@pytest.mark.parametrize("case", CASES)
def test_the_gpu_split_matches_a_cuda_build(fit_models: dict[str, Path], case: tuple) -> None:
    quant, n_ctx, slots, cache, fa, unified = case
    plan = ContextPlan(
        n_ctx=n_ctx,
        n_slots=slots,
        cache_type_k=cache,
        cache_type_v=cache,
        flash_attention=None if fa == "auto" else fa == "on",
        kv_unified=unified,
    )
    est = estimate_memory(read_metadata(fit_models[quant]), plan)
    for ngl, (gpu_mib, ram_mib) in CUDA_MEASURED[case].items():
        gpu, ram = split_memory(est, ngl, False, gpu_backend=True)
        print(
            f"{quant} ngl={ngl}: GPU {gpu / MIB:.2f} vs {gpu_mib}, RAM {ram / MIB:.2f} vs {ram_mib}"
        )
        assert abs(gpu / MIB - gpu_mib) <= max(1.0, 0.10 * gpu_mib), (ngl, gpu / MIB, gpu_mib)
        assert abs(ram / MIB - ram_mib) <= max(1.0, 0.10 * ram_mib), (ngl, ram / MIB, ram_mib)
