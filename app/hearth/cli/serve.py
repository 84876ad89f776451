"""``hearth serve`` (headless server) and ``hearth --worker`` (the GUI's own server).

Both parse the flags defined once in ``config.launch`` into ``LaunchSettings``, then
resolve the secrets (``server.options``) and run the same server. A key store that
cannot be read while keys may be needed stops both with exit code 2 (fail closed);
the worker also tells its supervisor why on stdout, so the GUI can keep the endpoint
off and say what to fix instead of showing a crash.

``--model`` and ``--draft-model`` take a GGUF path or a library model's name (as
``hearth ls`` and ``/v1/models`` show it): a value that is no file is looked up in the
library (``resolve_model_names``), and one that is neither stops with exit code 2 and
says so, before anything is bound or loaded. ``--mmproj`` (a vision projector) is
resolved the same way; without it, a model named from the library gets the projector
beside it (``core/projector_pairing.py``), as it would loaded just in time.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path

from hearth.config.launch import LaunchSettings, add_launch_arguments
from hearth.library.projectors import projector_beside

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


class UnknownModelError(ValueError):
    """A ``--model``, ``--draft-model`` or ``--mmproj`` that is neither a file nor a
    library model."""


Finder = Callable[[str], Path | None]


def library_finder() -> Finder:
    """Looks a name up in the library (scanned once, on the first name that is no file)."""
    from hearth.library.library import Library

    library: list[Library] = []

    def find(name: str) -> Path | None:
        if not library:
            library.append(Library())
        model = library[0].get(name)
        return model.path if model is not None and model.ok else None

    return find


def resolve_model_file(path: Path, flag: str, find: Finder | None = None) -> Path:
    """``path`` if it is a file, else the library model of that name (``hearth fit`` and
    ``hearth pull`` resolve ``--draft-model`` here too); ``UnknownModelError`` if neither."""
    find = find or library_finder()
    if path.is_file():
        return path
    found = find(str(path))
    if found is None:
        raise UnknownModelError(
            f"{flag} {path}: no such GGUF file, and no model of that name in the library. "
            "'hearth ls' lists the library's models; 'hearth import PATH' adds a file."
        )
    log.info("%s %s is %s", flag, path, found)
    return found


def resolve_model_names(settings: LaunchSettings, find: Finder | None = None) -> LaunchSettings:
    """``settings`` with library model names in ``--model``, ``--draft-model`` and
    ``--mmproj`` replaced by their files, and a model named from the library given the
    projector beside it; raises ``UnknownModelError`` for a name found nowhere."""
    find = find or library_finder()
    load = settings.load
    changes: dict[str, Path] = {}
    if settings.has_model:
        given = Path(load.model_path)
        changes["model_path"] = resolve_model_file(given, "--model", find)
        if load.mmproj_path is None and changes["model_path"] != given:  # named from the library
            projector = projector_beside(changes["model_path"])
            if projector is not None:
                log.info("--model %s: vision projector %s", given, projector.name)
                changes["mmproj_path"] = projector
    if load.mmproj_path is not None:  # a file, or a projector in the library by name
        changes["mmproj_path"] = resolve_model_file(Path(load.mmproj_path), "--mmproj", find)
    if load.draft_model_path is not None:
        draft = Path(load.draft_model_path)
        changes["draft_model_path"] = resolve_model_file(draft, "--draft-model", find)
    if not changes:
        return settings
    return dataclasses.replace(settings, load=dataclasses.replace(load, **changes))  # type: ignore[arg-type]


def run(args: argparse.Namespace) -> int:
    """The ``serve`` verb's handler."""
    try:
        settings = resolve_model_names(LaunchSettings.from_args(args))
    except UnknownModelError as exc:
        log.error("%s", exc)
        return REFUSED_EXIT
    return _serve(settings, worker=False)


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
