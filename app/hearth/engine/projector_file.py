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
from hearth.engine.gguf_meta import check_gguf_header

log = logging.getLogger(__name__)

# Where each projector type's output width (the text model's n_embd) can be read from
# its tensor table: the tensor and the index into its ggml shape. Copied from
# llama.cpp's clip_n_mmproj_embd (tools/mtmd/clip.cpp) for the common vision types; a
# type not listed is checked by libmtmd alone.
_OUTPUT_WIDTH: dict[str, tuple[str, int]] = {
    "gemma3": ("mm.input_projection.weight", 0),
    "gemma4v": ("mm.input_projection.weight", 1),
    "gemma4uv": ("mm.input_projection.weight", 1),
    "idefics3": ("mm.model.fc.weight", 1),
    "internvl": ("mm.3.weight", 1),
    "kimivl": ("mm.2.weight", 1),
    "lfm2": ("mm.2.weight", 1),
    "lightonocr": ("mm.2.weight", 1),
    "paddleocr": ("mm.2.weight", 1),
    "phi4": ("mm.2.weight", 1),
    "pixtral": ("mm.2.weight", 1),
    "qwen2vl_merger": ("mm.2.bias", 0),  # the merger's second matrix is mm.2 (no mm.1)
    "qwen2.5vl_merger": ("mm.2.bias", 0),
    "qwen3vl_merger": ("mm.2.bias", 0),  # times 1 + its deepstack mergers, below
}

# Qwen3-VL's deepstack: each vision block with a merger of its own (its
# ``v.deepstack.N.fc1.weight``, which is how llama.cpp's clip loader counts them) adds
# one more slice of the text width to every image embedding, as
# clip_n_mmproj_embd does. The text model reads the wider input
# (``llama_model_n_embd_inp``), and a model without deepstack cannot read it at all.
_DEEPSTACK_TYPES = frozenset({"qwen3vl_merger"})
_DEEPSTACK_PREFIX = "v.deepstack."
_DEEPSTACK_SUFFIX = ".fc1.weight"


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
    n_deepstack = _deepstack_count(reader) if projector_type in _DEEPSTACK_TYPES else 0
    width = _output_width(reader, projector_type)
    return ProjectorFile(
        path=path,
        projector_type=projector_type,
        n_embd=None if width is None else width * (1 + n_deepstack),
        image_size=int(size) if isinstance(size, int) else None,
        n_deepstack=n_deepstack,
    )


def _output_width(reader: gguf.GGUFReader, projector_type: str) -> int | None:
    where = _OUTPUT_WIDTH.get(projector_type)
    if where is None:
        return None
    name, index = where
    for tensor in reader.tensors:
        if tensor.name == name and len(tensor.shape) > index:
            return int(tensor.shape[index])
    log.debug("no %s to read a %s projector's output width from", name, projector_type)
    return None


def _deepstack_count(reader: gguf.GGUFReader) -> int:
    return sum(
        1
        for tensor in reader.tensors
        if tensor.name.startswith(_DEEPSTACK_PREFIX) and tensor.name.endswith(_DEEPSTACK_SUFFIX)
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
