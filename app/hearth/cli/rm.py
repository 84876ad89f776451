"""``hearth rm``: forget a model; delete its files only when Hearth downloaded them."""

from __future__ import annotations

import argparse

from hearth.cli.console import err, out


def add_parser(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rm = verbs.add_parser("rm", help="remove a model from the library")
    rm.add_argument("model", help="id, name or path (see 'hearth ls')")
    rm.add_argument(
        "--delete-files",
        action="store_true",
        help="also delete files Hearth did not download (in-place imports)",
    )
    rm.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from hearth.core.errors import HearthError
    from hearth.library.library import Library

    library = Library()
    model = library.get(args.model)
    if model is None:
        err(f"No model '{args.model}' in the library (see 'hearth ls').")
        return 1
    try:
        removed = library.delete(model, delete_files=args.delete_files)
    except HearthError as exc:
        err(exc.message)
        return 1
    out(f"Removed {model.id}" + (f" ({len(removed)} file(s) deleted)" if removed else ""))
    return 0
