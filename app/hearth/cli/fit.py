"""``hearth fit``: will this model fit in RAM/VRAM, before loading (or downloading) it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from hearth.cli.console import err, out

if TYPE_CHECKING:
    from hearth.hardware.probe import SystemMemory


def add_parser(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    fit = verbs.add_parser("fit", help="will this model fit? (RAM/VRAM estimate)")
    fit.add_argument("model", help="a library model or a .gguf path")
    fit.add_argument("--ctx", type=int, default=4096, help="context tokens per slot")
    fit.add_argument("--parallel", type=int, default=1, help="slots")
    fit.add_argument("--cache-type", default="f16", help="KV cache type (f16, q8_0, q4_0)")
    fit.set_defaults(handler=run)


def usable_system() -> SystemMemory:
    """This machine's memory, without GPUs when this llama.cpp build can't offload."""
    from hearth.engine.backend import supports_gpu_offload
    from hearth.hardware.probe import probe_system

    system = probe_system()
    return system if supports_gpu_offload() else system.without_gpus()


def run(args: argparse.Namespace) -> int:
    from hearth.core.errors import HearthError
    from hearth.hardware.fit import ContextPlan, estimate_fit
    from hearth.library.gguf_metadata import read_metadata
    from hearth.library.library import Library

    model = Library().get(args.model)
    path = model.path if model else Path(args.model)
    try:
        meta = model.metadata if model and model.metadata else read_metadata(path)
    except (HearthError, OSError) as exc:
        err(getattr(exc, "message", str(exc)))
        return 1
    plan = ContextPlan(n_ctx=args.ctx, n_slots=args.parallel,
                       cache_type_k=args.cache_type, cache_type_v=args.cache_type)  # fmt: skip
    estimate = estimate_fit(meta, plan, usable_system())
    out(estimate.summary)
    return 0 if estimate.verdict.value != "won't fit" else 1
