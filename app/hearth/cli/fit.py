"""``hearth fit``: will this model fit in RAM/VRAM, before loading (or downloading) it.

``--draft-model`` counts a draft model for speculative decoding as well: the worker
loads it beside the target with the same context and slots (``hardware.fit``). It
takes a GGUF path or a library model's name, resolved as ``hearth serve --draft-model``
resolves it (``cli.serve.resolve_model_file``); ``hearth pull`` takes it too.
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hearth.cli.console import err, out

if TYPE_CHECKING:
    from hearth.hardware.probe import SystemMemory
    from hearth.library.gguf_metadata import GgufMetadata

log = logging.getLogger(__name__)

DRAFT_HELP = (
    "count a draft model for speculative decoding too, loaded beside this one "
    "(a GGUF file or a library model's name, as for 'hearth serve --draft-model')"
)


def add_parser(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    fit = verbs.add_parser("fit", help="will this model fit? (RAM/VRAM estimate)")
    fit.add_argument("model", help="a library model or a .gguf path")
    fit.add_argument("--ctx", type=int, default=4096, help="context tokens per slot")
    fit.add_argument("--parallel", type=int, default=1, help="slots")
    fit.add_argument("--cache-type", default="f16", help="KV cache type (f16, q8_0, q4_0)")
    add_draft_argument(fit)
    fit.set_defaults(handler=run)


def add_draft_argument(parser: argparse.ArgumentParser) -> None:
    """``--draft-model NAME|FILE`` (``-md``, as ``hearth serve`` spells it)."""
    parser.add_argument("--draft-model", "-md", metavar="NAME|FILE", default=None,
                        help=DRAFT_HELP)  # fmt: skip


def usable_system() -> SystemMemory:
    """This machine's memory, without GPUs when this llama.cpp build can't offload."""
    from hearth.engine.backend import supports_gpu_offload
    from hearth.hardware.probe import probe_system

    system = probe_system()
    return system if supports_gpu_offload() else system.without_gpus()


@dataclass(frozen=True)
class Draft:
    """A draft model's file, the name the fit summary gives it, and its header."""

    path: Path
    name: str
    meta: GgufMetadata


class DraftError(Exception):
    """A ``--draft-model`` that names nothing, or no readable GGUF; the message says which."""


def read_draft(value: str | None) -> Draft | None:
    """The draft model ``--draft-model value`` names (None without one), resolved as
    ``hearth serve`` resolves it, with its header; ``DraftError`` when it can't be."""
    if not value:
        return None
    from hearth.cli.serve import UnknownModelError, resolve_model_file
    from hearth.core.errors import HearthError
    from hearth.library.gguf_metadata import read_metadata

    try:
        path = resolve_model_file(Path(value).expanduser(), "--draft-model")
        meta = read_metadata(path)
    except UnknownModelError as exc:
        raise DraftError(str(exc)) from exc
    except (HearthError, OSError) as exc:
        raise DraftError(f"--draft-model {value}: {getattr(exc, 'message', exc)}") from exc
    log.info("counting draft model %s", path)
    return Draft(path, path.name.removesuffix(".gguf"), meta)


def run(args: argparse.Namespace) -> int:
    from hearth.core.errors import HearthError
    from hearth.hardware.fit import ContextPlan, estimate_fit
    from hearth.library.gguf_metadata import read_metadata
    from hearth.library.library import Library

    model = Library().get(args.model)
    path = model.path if model else Path(args.model)
    try:
        meta = model.metadata if model and model.metadata else read_metadata(path)
        draft = read_draft(args.draft_model)
    except (HearthError, OSError, DraftError) as exc:
        err(getattr(exc, "message", str(exc)))
        return 1
    plan = ContextPlan(n_ctx=args.ctx, n_slots=args.parallel,
                       cache_type_k=args.cache_type, cache_type_v=args.cache_type)  # fmt: skip
    estimate = estimate_fit(meta, plan, usable_system(), draft=draft.meta if draft else None,
                            draft_name=draft.name if draft else "")  # fmt: skip
    out(estimate.summary)
    return 0 if estimate.verdict.value != "won't fit" else 1
