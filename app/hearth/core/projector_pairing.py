"""Which projector (``mmproj-*.gguf``) goes with which model: the one naming rule.

A vision model ships as two GGUFs: the text model and its image encoder, the
projector. Repos name the projector as llama.cpp's converter does (``mmproj-<model>-
f16.gguf``, or just ``mmproj-F16.gguf``, Unsloth's and LM Studio's shape) and some put
``mmproj`` inside the name (``<model>-mmproj-f16.gguf``). LM Studio and llama.cpp take a
projector from the model's own folder, so does Hearth:

1. only projectors in the model's folder count;
2. a projector whose name carries a model name must share the model's stem, word
   for word until one name ends (a ``mmproj-qwen2.5-vl`` file next to a Gemma is not
   Gemma's, nor ``mmproj-gemma-3-12b`` the 4B's); one without (``mmproj-F16``)
   belongs to whatever model sits in its folder;
3. among those, the name sharing most of the model's stem, then the best precision:
   F16, then BF16, F32, then quantized ones by their bits (a projector is small, and
   quantizing it costs more quality than it saves).

Discover's download of a repo's projector uses the same precision order
(:func:`projector_rank`), the Library and ``hearth serve`` :func:`pair_projector`.
Plain names only: no I/O here (``general.type == "mmproj"`` in a header is the
library's to read).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import PurePath
from typing import TypeVar

P = TypeVar("P", bound=PurePath)

MARKER = "mmproj"

_PRECISION_ORDER = ("F16", "BF16", "F32")
_PRECISION = re.compile(
    r"(?<![a-z0-9])(?P<p>bf16|fp16|f16|fp32|f32|i?q(?P<bits>\d)(?:_[a-z0-9]+)*)(?![a-z0-9])",
    re.IGNORECASE,
)
_ALIASES = {"FP16": "F16", "FP32": "F32"}
_SEPARATORS = re.compile(r"[\s._-]+")
_GENERIC = frozenset({"", "model", "vision", "projector"})

# Where each projector type's output width (the text model's n_embd) can be read from
# its tensor table: the tensor and the index into its ggml shape, as read by
# llama.cpp's clip_n_mmproj_embd (tools/mtmd/clip.cpp) for the common vision types; a
# type not listed is checked by libmtmd alone. Read by the worker before libmtmd sees a
# file (engine/projector_file.py) and by the Load dialog's choice (library/projectors.py).
OUTPUT_WIDTH: dict[str, tuple[str, int]] = {
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
    "qwen3vl_merger": ("mm.2.bias", 0),  # each slice; see output_width for deepstack
}

# Qwen3-VL's deepstack: each vision block with a merger of its own (its
# ``v.deepstack.N.fc1.weight``, which is how llama.cpp's clip loader counts them) adds
# one more slice of the text width to every image embedding, as clip_n_mmproj_embd
# does. The text model reads the wider input (``llama_model_n_embd_inp``), while its
# header's embedding length is one slice.
_DEEPSTACK_TYPES = frozenset({"qwen3vl_merger"})
_DEEPSTACK_PREFIX = "v.deepstack."
_DEEPSTACK_SUFFIX = ".fc1.weight"


def output_width(
    projector_type: str, tensors: Iterable[tuple[str, Sequence[int]]]
) -> tuple[int | None, int]:
    """From a projector's tensor table (name, ggml shape): the text width of each slice
    of its embeddings (the text model's ``embedding_length``; None where its type is not
    in ``OUTPUT_WIDTH``) and its number of deepstack slices beyond the first."""
    where = OUTPUT_WIDTH.get(projector_type)
    width: int | None = None
    deepstack = 0
    for name, shape in tensors:
        if where is not None and name == where[0] and len(shape) > where[1]:
            width = int(shape[where[1]])
        if (projector_type in _DEEPSTACK_TYPES and name.startswith(_DEEPSTACK_PREFIX)
                and name.endswith(_DEEPSTACK_SUFFIX)):  # fmt: skip
            deepstack += 1
    return width, deepstack


def is_projector(path: PurePath | str) -> bool:
    """Whether the file name is a projector's: a ``.gguf`` with ``mmproj`` in its name."""
    name = PurePath(path).name.lower()
    return name.endswith(".gguf") and MARKER in name


def projector_precision(path: PurePath | str) -> str | None:
    """The precision a projector's name states (``F16``, ``Q8_0``), upper-cased."""
    stem = _stem(path)
    found = None
    for match in _PRECISION.finditer(stem):
        found = match
    if found is None:
        return None
    name = found.group("p").upper()
    return _ALIASES.get(name, name)


def projector_rank(path: PurePath | str) -> tuple[int, int]:
    """Sort key, best first: F16, BF16, F32, then quantized by bits (most first), then
    names that state no precision."""
    precision = projector_precision(path)
    if precision in _PRECISION_ORDER:
        return (0, _PRECISION_ORDER.index(precision))
    match = _PRECISION.fullmatch(precision.lower()) if precision else None
    if match is not None and match.group("bits"):
        return (1, -int(match.group("bits")))
    return (2, 0)


def pair_projector(model: PurePath, candidates: Sequence[P]) -> P | None:
    """The projector for ``model`` among ``candidates`` (any files: those that are not
    projectors, or not in the model's folder, are skipped); None when none fits."""
    if is_projector(model):
        return None
    folder = model.parent
    own = _words(_model_stem(model))
    scored: list[tuple[int, tuple[int, int], str, P]] = []
    for path in candidates:
        if not is_projector(path) or path.parent != folder:
            continue
        words = _words(_projector_stem(path))
        if "-".join(words) in _GENERIC:
            shared = 0  # a generic name: the folder's model, whichever it is
        else:
            shared = _shared_prefix(own, words)
            if shared == 0 or shared < min(len(own), len(words)):
                continue  # names another model (or another size: gemma-3-12b, not 4b)
        scored.append((-shared, projector_rank(path), path.name.lower(), path))
    return min(scored)[3] if scored else None


def _stem(path: PurePath | str) -> str:
    name = PurePath(path).name
    return name[: -len(".gguf")] if name.lower().endswith(".gguf") else name


def _model_stem(path: PurePath) -> str:
    """The model's name without its quantization and shard suffix."""
    stem = re.sub(r"-\d{5}-of-\d{5}$", "", _stem(path))
    return _PRECISION.sub(" ", re.sub(r"(?i)(?<![a-z0-9])UD-", " ", stem))


def _projector_stem(path: PurePath) -> str:
    """The model name a projector's file name carries (may be empty)."""
    stem = re.sub(MARKER, " ", _stem(path), flags=re.IGNORECASE)
    return _PRECISION.sub(" ", stem)


def _words(text: str) -> list[str]:
    return [w for w in _SEPARATORS.split(text.lower()) if w]


def _shared_prefix(a: list[str], b: list[str]) -> int:
    """How many leading words the two names share (whole words: ``gemma-3-4b`` and
    ``gemma-3-12b`` share two, so neither name holds the other)."""
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count
