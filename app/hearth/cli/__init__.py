"""The ``hearth`` command line: one module per verb, dispatched from here.

``__main__`` calls :func:`main` for every first word that is not the GUI, the worker
or a helper process. Each verb module registers its parser with ``add_parser`` and
binds its handler with ``set_defaults(handler=...)``; :func:`main` only parses and
calls that handler. Verb modules import their heavy dependencies (hub, library,
hardware, server) inside the handler, so ``hearth --help`` stays fast.

The CLI never imports ``hearth.ui``: the ``gui`` verb (and a bare ``hearth -v``)
is handed back to ``__main__`` through the ``open_gui`` callable it passes in.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable

from hearth import __version__
from hearth.cli import (
    config,
    engines,
    fit,
    import_,
    keys,
    login,
    ls,
    mcp,
    paths,
    ps,
    pull,
    quantize,
    rm,
    run,
    search,
    serve,
)

log = logging.getLogger(__name__)

GuiOpener = Callable[[list[str]], int]
"""Opens the desktop app with these argv (program name first); returns its exit code."""


def configure_logging(verbose: bool, *, level: int = logging.INFO) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not verbose:
        logging.getLogger("hearth.llama_cpp").setLevel(logging.WARNING)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hearth",
        description="Private local language models. Run without arguments to open the app.",
    )
    parser.add_argument("--version", action="version", version=f"hearth {__version__}")
    parser.add_argument("--verbose", "-v", action="store_true", help="debug logging")
    verbs = parser.add_subparsers(dest="verb", metavar="COMMAND")
    for verb in (
        serve, run, ps, config, ls, rm, import_, fit, quantize, search, pull, login, keys, paths,
    ):
        verb.add_parser(verbs)
    engines.add_parser(verbs)  # remote engines (issue 15)
    mcp.add_parser(verbs)  # MCP servers' tools (issue 24)
    gui = verbs.add_parser("gui", help="open the desktop app (the default)")
    gui.add_argument("model", nargs="?", help="a .gguf file to open")
    return parser


def main(argv: list[str], *, open_gui: GuiOpener) -> int:
    """Run one CLI invocation; ``open_gui`` handles ``hearth gui`` (see module doc)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    quiet = args.verb not in ("serve", "gui", None)  # one-shot verbs: warnings only
    configure_logging(getattr(args, "verbose", False),
                      level=logging.WARNING if quiet else logging.INFO)  # fmt: skip
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is not None:
        return handler(args)
    if args.verb == "gui" or args.verb is None:
        model = getattr(args, "model", None)
        return open_gui(sys.argv[:1] + ([model] if model else []))
    parser.print_help()
    return 2
