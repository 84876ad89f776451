"""What a vision projector (mmproj) GGUF says about itself, read before libmtmd sees it.

libmtmd aborts the whole process on some files it cannot use, and answers others with
a bare "failed to load". So the worker reads the file's metadata and tensor table here
first (the ``gguf`` package maps the file; no tensor data is read) and turns the common
mistakes into a ``ModelLoadError`` a person understands: a text model picked as the
projector, an audio-only projector, and a projector made for another model, whose
embeddings are not as wide as this model's.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import gguf

from hearth.core.errors import ModelLoadError
from hearth.core.projector_pairing import OUTPUT_WIDTH, output_width
from hearth.engine.gguf_meta import check_gguf_header

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class ProjectorFile:
    """A projector file's facts, as read from its header."""

    path: Path
    projector_type: str
    n_embd: int | None
    """The width of the embeddings it makes; None where its type is not in the table."""
    image_size: int | None
    n_deepstack: int = 0
    """Qwen3-VL: its deepstack mergers, each one text width more in ``n_embd``."""


def _field(reader: gguf.GGUFReader, key: str) -> object:
    field = reader.fields.get(key)
    return None if field is None else field.contents()


def read_projector_file(path: Path) -> ProjectorFile:
    """Read and check ``path`` as a vision projector; raises ``ModelLoadError``."""
    check_gguf_header(path)
    try:
        reader = gguf.GGUFReader(path, "r")
    except Exception as exc:  # the reader fails each kind of cut-short file its own way
        log.debug("cannot read %s: %r", path, exc)
        raise ModelLoadError(
            f"{path.name} is damaged or cut short: its header and tensor table cannot be "
            "read. Re-download the projector."
        ) from exc
    arch = _field(reader, "general.architecture")
    if arch != "clip":
        raise ModelLoadError(
            f"{path.name} is a {arch or 'non-projector'} model, not a vision projector. "
            "Pick the model's mmproj file (its name usually starts with 'mmproj')."
        )
    if _field(reader, "clip.has_vision_encoder") is not True:
        raise ModelLoadError(
            f"{path.name} has no vision encoder (it may be an audio projector), so it "
            "cannot read images."
        )
    kind = _field(reader, "clip.projector_type") or _field(reader, "clip.vision.projector_type")
    projector_type = str(kind) if kind else "unknown"
    size = _field(reader, "clip.vision.image_size")
    width, n_deepstack = output_width(
        projector_type, ((t.name, tuple(int(n) for n in t.shape)) for t in reader.tensors)
    )
    if width is None and projector_type in OUTPUT_WIDTH:
        log.debug("no tensor to read a %s projector's output width from", projector_type)
    return ProjectorFile(
        path=path,
        projector_type=projector_type,
        n_embd=None if width is None else width * (1 + n_deepstack),
        image_size=int(size) if isinstance(size, int) else None,
        n_deepstack=n_deepstack,
    )


def check_fits_model(projector: ProjectorFile, model_name: str, model_n_embd: int) -> None:
    """A projector makes embeddings for one text model's width; another model's would
    be garbage to this one (and libmtmd refuses the pair), so say which file is wrong."""
    if projector.n_embd is not None and projector.n_embd != model_n_embd:
        how = ""
        if projector.n_deepstack:
            part = projector.n_embd // (1 + projector.n_deepstack)
            how = f" ({part} wide, plus {projector.n_deepstack} deepstack layers of {part})"
        raise ModelLoadError(
            f"The projector {projector.path.name} makes {projector.n_embd}-wide "
            f"embeddings{how} but {model_name} reads {model_n_embd}-wide ones: the "
            "projector belongs to another model. Pick the mmproj file published with "
            "this model."
        )
