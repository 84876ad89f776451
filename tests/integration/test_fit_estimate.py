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
from hearth.hardware.fit import ContextPlan, estimate_memory
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


def llama_cpp_reports(path: Path, plan: ContextPlan, fa: str) -> dict[str, float]:
    """Bytes llama.cpp allocated, by kind, from a real load in a child process."""
    args = [str(path), str(plan.n_ctx), str(plan.n_slots), plan.cache_type_k, fa]
    args.append("1" if plan.kv_unified else "0")
    proc = subprocess.run(
        [sys.executable, "-c", LOAD, *args], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    found: dict[str, float] = {}
    for _device, kind, mib in BUFFER.findall(proc.stderr):
        found[kind] = found.get(kind, 0.0) + float(mib) * MIB
    assert {"model", "KV", "compute", "output"} <= set(found), proc.stderr[-3000:]
    # Repacked CPU weights are listed twice (mapped + repacked copy): take the model's
    # own size for the weights, which llama.cpp reports exactly.
    found["model"] = float(json.loads(proc.stdout)["model_size"])
    return found


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
    real = llama_cpp_reports(path, plan, fa)
    est = estimate_memory(read_metadata(path), plan)

    assert est.weights_bytes == real["model"]  # the tensor table is the truth
    assert abs(est.kv_cache_bytes - real["KV"]) <= 0.01 * MIB  # log rounds to 0.01 MiB
    total_real = sum(real.values())
    error = (est.total_bytes - total_real) / total_real
    print(  # visible with -s; the report quotes these
        f"\n{quant} ctx={n_ctx}x{slots} kv={cache} fa={fa} unified={unified}: estimate "
        f"{est.total_bytes / MIB:.2f} MiB, llama.cpp {total_real / MIB:.2f} MiB "
        f"(weights {real['model'] / MIB:.2f}, KV {real['KV'] / MIB:.2f}, compute "
        f"{real['compute'] / MIB:.2f}, output {real['output'] / MIB:.2f}); error {error:+.2%}"
    )
    assert abs(error) < 0.10
    assert abs(est.compute_bytes - real["compute"]) < 0.25 * real["compute"]
