"""CLI verbs for models on disk: ls, rm, import, fit, quantize."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path

from hearth.cli_progress import ProgressLine, human_bytes


def add_model_verbs(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ls = verbs.add_parser("ls", help="list the models Hearth knows")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    rm = verbs.add_parser("rm", help="remove a model from the library")
    rm.add_argument("model", help="id, name or path (see 'hearth ls')")
    rm.add_argument(
        "--delete-files",
        action="store_true",
        help="also delete files Hearth did not download (in-place imports)",
    )
    imp = verbs.add_parser("import", help="use GGUF files already on disk, without copying")
    imp.add_argument("path", nargs="?", type=Path, help="a .gguf file or a folder to index")
    imp.add_argument(
        "--from-apps",
        action="store_true",
        help="find models from LM Studio, Ollama, the HF cache, GPT4All, Jan",
    )
    fit = verbs.add_parser("fit", help="will this model fit? (RAM/VRAM estimate)")
    fit.add_argument("model", help="a library model or a .gguf path")
    fit.add_argument("--ctx", type=int, default=4096, help="context tokens per slot")
    fit.add_argument("--parallel", type=int, default=1, help="slots")
    fit.add_argument("--cache-type", default="f16", help="KV cache type (f16, q8_0, q4_0)")
    quant = verbs.add_parser("quantize", help="quantize an F16/BF16/F32 GGUF")
    quant.add_argument("source", type=Path)
    quant.add_argument("type", help="Q8_0, Q6_K, Q5_K_M, Q4_K_M, Q4_0, ...")
    quant.add_argument("-o", "--output", type=Path, default=None)
    quant.add_argument("--threads", type=int, default=0)
    quant.add_argument("--overwrite", action="store_true")


def run_model_verb(args: argparse.Namespace) -> int | None:
    """Handle the verb if it is one of ours; None otherwise."""
    handlers = {"ls": _ls, "rm": _rm, "import": _import, "fit": _fit, "quantize": _quantize}
    handler = handlers.get(args.verb)
    return handler(args) if handler else None


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")


def _ls(args: argparse.Namespace) -> int:
    from hearth.library.library import Library

    library = Library()
    models = library.models()
    if args.json:
        rows = [{"id": m.id, "path": str(m.path), "size": m.size_bytes, "source": m.source.value,
                 "quantization": m.metadata.quantization if m.metadata else None,
                 "error": m.error} for m in models]  # fmt: skip
        _out(json.dumps(rows, indent=2))
        return 0
    if not models:
        _out("No models yet. Try 'hearth import --from-apps' or 'hearth pull OWNER/REPO'.")
        return 0
    width = max(len(m.id) for m in models)
    for m in models:
        quant = m.metadata.quantization if m.metadata else "?"
        status = f"  ! {m.error}" if m.error else ""
        _out(f"{m.id:<{width}}  {quant or '?':<8} {human_bytes(m.size_bytes):>10}  "
             f"{m.source.value:<8}{status}")  # fmt: skip
    problem = library.index_problem()
    if problem:
        _err(problem)
    return 0


def _rm(args: argparse.Namespace) -> int:
    from hearth.core.errors import HearthError
    from hearth.library.library import Library

    library = Library()
    model = library.get(args.model)
    if model is None:
        _err(f"No model '{args.model}' in the library (see 'hearth ls').")
        return 1
    try:
        removed = library.delete(model, delete_files=args.delete_files)
    except HearthError as exc:
        _err(exc.message)
        return 1
    _out(f"Removed {model.id}" + (f" ({len(removed)} file(s) deleted)" if removed else ""))
    return 0


def _import(args: argparse.Namespace) -> int:
    from hearth.core.errors import HearthError
    from hearth.library.discovery import discover_all
    from hearth.library.library import Library

    library = Library()
    if args.from_apps:
        found = discover_all()
        if not found:
            _out("No models from other apps were found.")
        failures = 0
        for item in found:
            try:
                model = library.import_in_place(item.files[0], name=item.name, origin=item.app)
                _out(f"imported {model.id}  ({item.app}, {human_bytes(item.size_bytes)})")
            except HearthError as exc:
                failures += 1
                _err(f"skipped {item.name} ({item.app}): {exc.message}")
        return 1 if failures and failures == len(found) else 0
    if args.path is None:
        _err("Give a .gguf file or folder, or --from-apps.")
        return 2
    try:
        if args.path.is_dir():
            folder = library.add_folder(args.path)
            count = sum(1 for m in library.models() if folder in m.path.parents)
            _out(f"Indexed {folder}: {count} model(s), nothing copied.")
        else:
            model = library.import_in_place(args.path)
            _out(f"Imported {model.id} in place: {model.path}")
    except HearthError as exc:
        _err(exc.message)
        return 1
    return 0


def _fit(args: argparse.Namespace) -> int:
    from hearth.core.errors import HearthError
    from hearth.engine.backend import supports_gpu_offload
    from hearth.hardware.fit import ContextPlan, estimate_fit
    from hearth.hardware.probe import probe_system
    from hearth.library.gguf_metadata import read_metadata
    from hearth.library.library import Library

    model = Library().get(args.model)
    path = model.path if model else Path(args.model)
    try:
        meta = model.metadata if model and model.metadata else read_metadata(path)
    except (HearthError, OSError) as exc:
        _err(getattr(exc, "message", str(exc)))
        return 1
    system = probe_system()
    if not supports_gpu_offload():
        system = system.without_gpus()
    plan = ContextPlan(n_ctx=args.ctx, n_slots=args.parallel,
                       cache_type_k=args.cache_type, cache_type_v=args.cache_type)  # fmt: skip
    estimate = estimate_fit(meta, plan, system)
    _out(estimate.summary)
    return 0 if estimate.verdict.value != "won't fit" else 1


def _quantize(args: argparse.Namespace) -> int:
    from hearth.library.quantize_job import JobState, QuantizeJob

    dst = args.output or args.source.with_name(
        f"{args.source.stem.rsplit('-', 1)[0]}-{args.type.upper()}.gguf"
    )
    progress = ProgressLine(f"quantize {args.source.name} -> {args.type}", unit="tensors")
    done = threading.Event()
    job = QuantizeJob(args.source, dst, args.type, threads=args.threads,
                      overwrite=args.overwrite,
                      on_progress=lambda f: progress.update(f * 100, 100),
                      on_done=lambda _job: done.set())  # fmt: skip
    job.start()
    try:
        while not done.wait(0.2):
            pass
    except KeyboardInterrupt:
        job.cancel()
        progress.close("Cancelled; no partial file was kept.")
        return 130
    job.wait()
    if job.state is JobState.DONE:
        progress.update(100, 100, force=True)
        progress.close(f"Wrote {job.output or dst}")
        return 0
    progress.close(f"Quantizing failed: {job.error or job.stderr_tail()}")
    return 1
