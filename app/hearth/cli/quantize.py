"""``hearth quantize``: make a smaller GGUF from an F16/BF16/F32 one, in a child process."""

from __future__ import annotations

import argparse
import threading
from pathlib import Path

from hearth.cli.progress import ProgressLine


def add_parser(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    quant = verbs.add_parser("quantize", help="quantize an F16/BF16/F32 GGUF")
    quant.add_argument("source", type=Path)
    quant.add_argument("type", help="Q8_0, Q6_K, Q5_K_M, Q4_K_M, Q4_0, ...")
    quant.add_argument("-o", "--output", type=Path, default=None)
    quant.add_argument("--threads", type=int, default=0)
    quant.add_argument("--overwrite", action="store_true")
    quant.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
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
