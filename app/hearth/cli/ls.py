"""``hearth ls``: the models Hearth knows, with quantization, size and source."""

from __future__ import annotations

import argparse
import json

from hearth.cli.console import err, out
from hearth.core.units import format_bytes


def add_parser(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ls = verbs.add_parser("ls", help="list the models Hearth knows")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    ls.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from hearth.library.library import Library

    library = Library()
    models = library.models()
    if args.json:
        rows = [{"id": m.id, "path": str(m.path), "size": m.size_bytes, "source": m.source.value,
                 "quantization": m.metadata.quantization if m.metadata else None,
                 "error": m.error} for m in models]  # fmt: skip
        out(json.dumps(rows, indent=2))
        return 0
    if not models:
        out("No models yet. Try 'hearth import --from-apps' or 'hearth pull OWNER/REPO'.")
        return 0
    width = max(len(m.id) for m in models)
    for m in models:
        quant = m.metadata.quantization if m.metadata else "?"
        status = f"  ! {m.error}" if m.error else ""
        out(f"{m.id:<{width}}  {quant or '?':<8} {format_bytes(m.size_bytes):>10}  "
            f"{m.source.value:<8}{status}")  # fmt: skip
    problem = library.index_problem()
    if problem:
        err(problem)
    return 0
