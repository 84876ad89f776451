"""Vision projectors on disk: the one beside a model file (the rule:
core/projector_pairing.py), and what a projector's header says about it.

The Load dialog lets a person pick a projector by hand, from the library or any file.
Before it is offered or accepted, its header is read here (no tensor data): a text model
picked by mistake, an audio-only projector, or one made for another model's width is
refused with a message that names the file and what is wrong. The worker checks the
same things again before libmtmd sees the file (``engine/projector_file.py``), with
the same width table (``core.projector_pairing.OUTPUT_WIDTH``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from hearth.core.projector_pairing import is_projector, output_width, pair_projector
from hearth.library.errors import InvalidModelFileError
from hearth.library.gguf_metadata import GgufMetadata, read_metadata

log = logging.getLogger(__name__)

PROJECTOR_ARCH = "clip"  # general.architecture of every llama.cpp projector


class ProjectorFileError(InvalidModelFileError):
    """The file can't be this model's vision projector; the message says why."""

    code = "invalid_projector"


@dataclass(frozen=True)
class ProjectorFacts:
    """A projector as its header describes it."""

    path: Path
    projector_type: str  # llama.cpp's clip.projector_type: "gemma3", "qwen2.5vl_merger"...
    n_embd: int | None  # the text width it makes embeddings for (a deepstack projector's
    # embeddings hold several slices of it); None: its type isn't known
    size_bytes: int  # its weights (what loading it takes, about its file's size)


def projector_beside(model: Path) -> Path | None:
    """The projector in ``model``'s folder that pairs with it, or None (also when the
    folder cannot be listed: the model then loads for text alone)."""
    try:
        beside = [p for p in model.parent.iterdir() if is_projector(p) and p.is_file()]
    except OSError as exc:
        log.debug("cannot list %s for a projector: %s", model.parent, exc)
        return None
    return pair_projector(model, beside)


def projector_facts(path: Path, meta: GgufMetadata) -> ProjectorFacts:
    """``meta`` (the header of ``path``) as a vision projector's, or
    :class:`ProjectorFileError`: not a projector, or one with no vision encoder."""
    if meta.architecture != PROJECTOR_ARCH:
        raise ProjectorFileError(
            f"{path.name} is a {meta.architecture or 'non-projector'} model, not a vision "
            "projector. Pick the model's mmproj file (its name usually starts with 'mmproj')."
        )
    if meta.kv.get("clip.has_vision_encoder") is not True:
        raise ProjectorFileError(
            f"{path.name} has no vision encoder (it may be an audio projector), so it "
            "cannot read images."
        )
    kind = meta.kv.get("clip.projector_type") or meta.kv.get("clip.vision.projector_type")
    projector_type = kind if isinstance(kind, str) and kind else "unknown"
    return ProjectorFacts(
        path=path,
        projector_type=projector_type,
        n_embd=output_width(projector_type, ((t.name, t.shape) for t in meta.tensors))[0],
        size_bytes=sum(t.n_bytes for t in meta.tensors),
    )


def read_projector(path: Path) -> ProjectorFacts:
    """Read ``path``'s header and check it as a vision projector (blocking file I/O:
    call it off the Qt thread). Raises :class:`ProjectorFileError` or, for a file that
    is no GGUF at all, :class:`InvalidModelFileError`."""
    return projector_facts(path, read_metadata(path))


def mismatch(facts: ProjectorFacts, model_name: str, model_n_embd: int | None) -> str | None:
    """Why ``facts`` can't serve a model ``model_n_embd`` wide; None when it fits (or
    either width is unknown: the worker's check has the last word)."""
    if facts.n_embd is None or not model_n_embd or facts.n_embd == model_n_embd:
        return None
    return (
        f"The projector {facts.path.name} makes {facts.n_embd}-wide embeddings but "
        f"{model_name} reads {model_n_embd}-wide ones: it belongs to another model. Pick "
        "the mmproj file published with this model."
    )
