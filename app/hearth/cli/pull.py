"""``hearth pull``: download a GGUF model from Hugging Face, checking the fit first.

Without a quantization named, it picks the largest one that fits this machine (beside
the ``--draft-model`` it will be used with, if one is named: ``cli.fit.read_draft``);
the download resumes after a drop or a quit and is verified before it is kept.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from hearth.cli.console import err, out
from hearth.cli.fit import Draft, DraftError, add_draft_argument, read_draft, usable_system
from hearth.cli.progress import ProgressLine
from hearth.core.units import format_bytes

if TYPE_CHECKING:
    from hearth.hardware.fit import FitEstimate
    from hearth.hub import DownloadEvent, GgufModel, RepoListing
    from hearth.library.gguf_metadata import GgufMetadata


def add_parser(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pull = verbs.add_parser("pull", help="download a GGUF model (resumable, verified)")
    pull.add_argument("ref", help="OWNER/REPO or OWNER/REPO:QUANT (e.g. :Q4_K_M)")
    pull.add_argument("--ctx", type=int, default=4096, help="context to check the fit for")
    pull.add_argument("--force", action="store_true", help="download even if it won't fit")
    pull.add_argument("--list", action="store_true", help="only list the quantizations")
    add_draft_argument(pull)
    pull.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from hearth.core.errors import HearthError

    try:
        return asyncio.run(_pull_async(args))
    except HearthError as exc:
        err(exc.message)
        return 1
    except KeyboardInterrupt:
        err("Paused. Run the same command again to resume where it stopped.")
        return 130


Confirm = Callable[[str], bool]
"""Asked "download anyway?" with the fit summary when a model won't fit."""


async def _pull_async(args: argparse.Namespace) -> int:
    if args.list:
        return _list_quants(args.ref)
    try:
        draft = read_draft(args.draft_model)
    except DraftError as exc:
        err(str(exc))
        return 1
    path = await pull_model(args.ref, ctx=args.ctx, force=args.force, draft=draft)
    return 0 if path is not None else 1


def _list_quants(ref: str) -> int:
    from hearth.hub import list_repo_gguf

    repo_id = ref.partition(":")[0]
    listing = list_repo_gguf(repo_id)
    if not listing.models:
        err(f"{repo_id} has no GGUF files.")
        return 1
    for entry in listing.models:
        out(f"{entry.quant or '?':<10} {format_bytes(entry.total_size or 0):>10}  {entry.name}")
    return 0


async def pull_model(
    ref: str,
    *,
    ctx: int,
    force: bool = False,
    confirm: Confirm | None = None,
    draft: Draft | None = None,
) -> Path | None:
    """Download ``OWNER/REPO[:QUANT]`` into the models folder (resuming, verified) and
    return the first file; None after a message on stderr. A model that won't fit
    (beside ``draft``, when given) is downloaded only with ``force`` or when ``confirm``
    says yes."""
    from hearth.config.paths import default_paths
    from hearth.hub import DownloadManager, DownloadState, list_repo_gguf
    from hearth.hub.header import remote_metadata

    repo_id, _, quant = ref.partition(":")
    listing = list_repo_gguf(repo_id)
    if not listing.models:
        err(f"{repo_id} has no GGUF files.")
        return None
    model = _choose(listing, quant)
    if model is None:
        err(f"No {quant} file in {repo_id}. Available: {', '.join(listing.quants) or 'none'}.")
        return None
    revision = listing.commit or "main"
    meta = remote_metadata(repo_id, model.files[0].path, revision=revision,
                           size=model.files[0].size)  # fmt: skip
    if not quant:  # no quantization named: the largest one that fits this machine
        best = _suggest(listing, meta, ctx, draft)
        if best is not None and best is not model:
            model = best
            meta = remote_metadata(repo_id, model.files[0].path, revision=revision,
                                   size=model.files[0].size)  # fmt: skip
    verdict = _fit(meta, ctx, draft)
    out(f"{repo_id} {model.quant or model.name}: {format_bytes(model.total_size or 0)}")
    out(f"Fit at {ctx} tokens: {verdict.summary}")
    wont_fit = verdict.verdict.value == "won't fit" and not force
    if wont_fit and (confirm is None or not confirm(verdict.summary)):
        err("It won't fit on this machine; pick a smaller quantization or pass --force.")
        return None
    paths = default_paths().ensure()
    bars: dict[int, ProgressLine] = {}

    def on_event(event: DownloadEvent) -> None:
        bar = bars.setdefault(event.download_id, ProgressLine(event.filename))
        bar.update(event.bytes_done, event.total)

    manager = DownloadManager(paths.models_dir, on_event=on_event)
    try:
        handles = manager.add_model(repo_id, model, revision=listing.commit or "main")
        files = [await handle.wait() for handle in handles]
    finally:
        await manager.aclose()
    for handle in handles:
        if handle.state is not DownloadState.COMPLETED:
            return None
    for bar in bars.values():
        bar.close()
    out(f"Downloaded and verified: {files[0]}")
    _check_quant_name(model, files[0])
    return Path(files[0])


def _check_quant_name(model: GgufModel, path: Path) -> None:
    """The quantization in the file name is a claim; the header is the fact."""
    from hearth.library.gguf_metadata import read_metadata

    actual = read_metadata(path).quantization
    if model.quant and actual and actual.upper() != model.quant.upper():
        err(f"Note: the file name says {model.quant}, but the file is {actual}.")


def _suggest(
    listing: RepoListing, meta: GgufMetadata, n_ctx: int, draft: Draft | None
) -> GgufModel | None:
    from hearth.hardware.fit import ContextPlan
    from hearth.hardware.quant_choice import QuantCandidate, suggest_quantization

    candidates = [
        QuantCandidate(m.quant or m.name, m.total_size or 0, m.name)
        for m in listing.models
        if m.complete and m.total_size
    ]
    suggestion = suggest_quantization(meta, candidates, ContextPlan(n_ctx=n_ctx), usable_system(),
                                      draft.meta if draft else None)  # fmt: skip
    if suggestion is None:
        return None
    return next((m for m in listing.models if m.name == suggestion.candidate.name), None)


def _choose(listing: RepoListing, quant: str) -> GgufModel | None:
    models = listing.models
    if quant:
        found = listing.find(quant)
        return found[0] if found else None
    preferred = [m for m in models if (m.quant or "").upper() == "Q4_K_M"]
    return preferred[0] if preferred else models[0]


def _fit(meta: GgufMetadata, n_ctx: int, draft: Draft | None = None) -> FitEstimate:
    from hearth.hardware.fit import ContextPlan, estimate_fit

    return estimate_fit(meta, ContextPlan(n_ctx=n_ctx), usable_system(),
                        draft=draft.meta if draft else None,
                        draft_name=draft.name if draft else "")  # fmt: skip
