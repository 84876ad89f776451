"""The ``hearth`` command line: serve headless, or open the GUI."""

from __future__ import annotations

import argparse
import logging
import sys

from hearth import __version__

log = logging.getLogger(__name__)


def configure_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not verbose:
        logging.getLogger("hearth.llama_cpp").setLevel(logging.WARNING)


def build_parser() -> argparse.ArgumentParser:
    from hearth.server.options import add_serve_arguments

    parser = argparse.ArgumentParser(
        prog="hearth",
        description="Private local language models. Run without arguments to open the app.",
    )
    parser.add_argument("--version", action="version", version=f"hearth {__version__}")
    parser.add_argument("--verbose", "-v", action="store_true", help="debug logging")
    verbs = parser.add_subparsers(dest="verb", metavar="COMMAND")
    serve = verbs.add_parser(
        "serve",
        help="serve a model on an OpenAI-compatible endpoint, without the GUI",
        description="Serve a GGUF model on an OpenAI-compatible HTTP endpoint.",
    )
    add_serve_arguments(serve)
    serve.add_argument("--verbose", "-v", action="store_true", help="debug logging")
    gui = verbs.add_parser("gui", help="open the desktop app (the default)")
    gui.add_argument("model", nargs="?", help="a .gguf file to open")
    return parser


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(getattr(args, "verbose", False))
    if args.verb == "serve":
        from hearth.server.options import options_from_args
        from hearth.server.runner import run_server

        return run_server(options_from_args(args, worker=False))
    if args.verb == "gui" or args.verb is None:
        from hearth.ui.app import run_gui

        model = getattr(args, "model", None)
        return run_gui(sys.argv[:1] + ([model] if model else []))
    parser.print_help()
    return 2


def worker_main(argv: list[str]) -> int:
    """``hearth --worker``: the same server, started and owned by the GUI."""
    from hearth.server.options import add_serve_arguments, options_from_args
    from hearth.server.runner import run_server

    parser = argparse.ArgumentParser(prog="hearth --worker")
    add_serve_arguments(parser)
    parser.set_defaults(port=0)
    parser.add_argument("--verbose", "-v", action="store_true")
    args = parser.parse_args(argv)
    configure_logging(args.verbose)
    return run_server(options_from_args(args, worker=True))
