"""``hearth serve`` (headless server) and ``hearth --worker`` (the GUI's own server).

Both parse the flags defined once in ``config.launch`` into ``LaunchSettings``, then
resolve the secrets (``server.options``) and run the same server. A key store that
cannot be read while keys may be needed stops both with exit code 2 (fail closed);
the worker also tells its supervisor why on stdout, so the GUI can keep the endpoint
off and say what to fix instead of showing a crash.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from hearth.config.launch import LaunchSettings, add_launch_arguments

log = logging.getLogger(__name__)

REFUSED_EXIT = 2


def add_parser(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = verbs.add_parser(
        "serve",
        help="serve a model on an OpenAI-compatible endpoint, without the GUI",
        description="Serve a GGUF model on an OpenAI-compatible HTTP endpoint.",
    )
    add_launch_arguments(serve)
    serve.add_argument("--verbose", "-v", action="store_true", help="debug logging")
    serve.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """The ``serve`` verb's handler."""
    return _serve(LaunchSettings.from_args(args), worker=False)


def worker_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hearth --worker")
    add_launch_arguments(parser)
    parser.set_defaults(port=0)
    parser.add_argument("--verbose", "-v", action="store_true")
    return parser


def worker_main(argv: list[str]) -> int:
    """``hearth --worker``: the same server, started and owned by the GUI."""
    from hearth.cli import configure_logging

    args = worker_parser().parse_args(argv)
    configure_logging(args.verbose)
    return _serve(LaunchSettings.from_args(args), worker=True)


def _serve(settings: LaunchSettings, *, worker: bool) -> int:
    from hearth.server.options import KeyStoreUnreadableError, resolve_options
    from hearth.server.runner import run_server

    try:
        options = resolve_options(settings, worker=worker)
    except KeyStoreUnreadableError as exc:
        log.error("%s", exc.message)
        if worker:
            refusal = {"event": "refused", "code": exc.code, "message": exc.message}
            sys.stdout.write(json.dumps(refusal) + "\n")
            sys.stdout.flush()
        return REFUSED_EXIT
    return run_server(options)
