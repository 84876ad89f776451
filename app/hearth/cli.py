"""The ``hearth`` command line: serve headless, or open the GUI."""

from __future__ import annotations

import argparse
import logging
import sys

from hearth import __version__
from hearth.cli_hub import add_hub_verbs, run_hub_verb
from hearth.cli_keys import add_key_verbs, run_key_verb
from hearth.cli_models import add_model_verbs, run_model_verb
from hearth.cli_paths import add_paths_verb, run_paths_verb

log = logging.getLogger(__name__)


def configure_logging(verbose: bool, *, level: int = logging.INFO) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else level,
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
    config = verbs.add_parser(
        "config",
        help="print working client config for a running endpoint",
        description="Print config for Continue, the OpenAI SDK or curl, for a running "
        "Hearth endpoint (it asks the endpoint which model it serves).",
    )
    config.add_argument("client", choices=["continue", "openai", "curl"])
    config.add_argument("--url", default=None, help="endpoint (default http://127.0.0.1:PORT)")
    config.add_argument("--api-key", default=None, help="key to ask the endpoint with")
    add_model_verbs(verbs)
    add_hub_verbs(verbs)
    add_key_verbs(verbs)
    add_paths_verb(verbs)
    gui = verbs.add_parser("gui", help="open the desktop app (the default)")
    gui.add_argument("model", nargs="?", help="a .gguf file to open")
    return parser


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    quiet = args.verb not in ("serve", "gui", None)  # one-shot verbs: warnings only
    configure_logging(getattr(args, "verbose", False),
                      level=logging.WARNING if quiet else logging.INFO)  # fmt: skip
    if args.verb == "serve":
        from hearth.server.options import options_from_args
        from hearth.server.runner import run_server

        return run_server(options_from_args(args, worker=False))
    handled = run_model_verb(args)
    if handled is None:
        handled = run_hub_verb(args)
    if handled is None:
        handled = run_key_verb(args)
    if handled is None:
        handled = run_paths_verb(args)
    if handled is not None:
        return handled
    if args.verb == "config":
        return print_client_config(args.client, args.url, args.api_key)
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


def print_client_config(client: str, url: str | None, api_key: str | None) -> int:
    import os

    import httpx

    from hearth.client_config import SNIPPETS, Endpoint
    from hearth.server.options import API_KEY_ENV, DEFAULT_PORT

    base_url = (url or f"http://127.0.0.1:{DEFAULT_PORT}").rstrip("/")
    key = api_key or os.environ.get(API_KEY_ENV)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        response = httpx.get(f"{base_url}/v1/models", headers=headers, timeout=5)
    except httpx.HTTPError as exc:
        log.error(
            "No Hearth endpoint answers at %s (%s). Start one with 'hearth serve' or pass --url.",
            base_url,
            exc,
        )
        return 1
    if response.status_code == 401:
        log.error("The endpoint at %s needs an API key: pass --api-key.", base_url)
        return 1
    models = response.json().get("data", [])
    if not models:
        log.error("The endpoint at %s has no model loaded yet.", base_url)
        return 1
    model = models[0]
    endpoint = Endpoint(
        base_url=base_url,
        model=model["id"],
        keyed=bool(key),
        fim=bool(model.get("meta", {}).get("fim", False)),
    )
    sys.stdout.write(SNIPPETS[client](endpoint))
    return 0
