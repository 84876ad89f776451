"""``hearth import``: use GGUF files already on disk in place, without copying them.

Named ``import_`` because ``import`` is a Python keyword; the verb is ``import``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from hearth.cli.console import err, out
from hearth.core.units import format_bytes

if TYPE_CHECKING:
    from hearth.library.library import Library


def add_parser(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    imp = verbs.add_parser("import", help="use GGUF files already on disk, without copying")
    imp.add_argument("path", nargs="?", type=Path, help="a .gguf file or a folder to index")
    imp.add_argument(
        "--from-apps",
        action="store_true",
        help="find models from LM Studio, Ollama, the HF cache, GPT4All, Jan",
    )
    imp.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from hearth.core.errors import HearthError
    from hearth.library.library import Library

    library = Library()
    if args.from_apps:
        return _from_apps(library)
    if args.path is None:
        err("Give a .gguf file or folder, or --from-apps.")
        return 2
    try:
        if args.path.is_dir():
            folder = library.add_folder(args.path)
            count = sum(1 for m in library.models() if folder in m.path.parents)
            out(f"Indexed {folder}: {count} model(s), nothing copied.")
        else:
            model = library.import_in_place(args.path)
            out(f"Imported {model.id} in place: {model.path}")
    except HearthError as exc:
        err(exc.message)
        return 1
    return 0


def _from_apps(library: Library) -> int:
    """Import what other apps downloaded; fails only when every one was skipped."""
    from hearth.core.errors import HearthError
    from hearth.library.discovery import discover_all

    found = discover_all()
    if not found:
        out("No models from other apps were found.")
    failures = 0
    for item in found:
        try:
            model = library.import_in_place(item.files[0], name=item.name, origin=item.app)
            out(f"imported {model.id}  ({item.app}, {format_bytes(item.size_bytes)})")
        except HearthError as exc:
            failures += 1
            err(f"skipped {item.name} ({item.app}): {exc.message}")
    return 1 if failures and failures == len(found) else 0
