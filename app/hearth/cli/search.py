"""``hearth search``: GGUF models on Hugging Face, most downloaded first."""

from __future__ import annotations

import argparse

from hearth.cli.console import err, out


def add_parser(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    search = verbs.add_parser("search", help="search GGUF models on Hugging Face")
    search.add_argument("query", nargs="?", default="")
    search.add_argument(
        "--sort", choices=["downloads", "likes", "last_modified"], default="downloads"
    )
    search.add_argument("--limit", type=int, default=20)
    search.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from hearth.core.errors import HearthError
    from hearth.hub import search_models

    try:
        results = search_models(args.query, sort=args.sort, limit=args.limit)
    except HearthError as exc:
        err(exc.message)
        return 1
    if not results:
        out("No GGUF models match.")
    for r in results:
        gated = "  (gated)" if r.gated else ""
        out(f"{r.repo_id:<60} {r.downloads:>10,} downloads {r.likes:>6,} likes{gated}")
    return 0
