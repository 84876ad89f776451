"""File names from the Hub: untrusted paths, quantization types, split shards.

Everything here is pure string work. File names and repo ids come from a remote server,
so they are validated before they ever become a local path.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from hearth.hub.errors import UnsafePathError

_MAX_SEGMENT = 255
_MAX_PATH = 1024
# Characters Windows forbids in names; rejected everywhere so a library is portable.
_FORBIDDEN_CHARS = frozenset('<>:"|?*\\')
_WINDOWS_RESERVED = frozenset(
    {"CON", "PRN", "AUX", "NUL"}
    | {f"COM{i}" for i in range(1, 10)}
    | {f"LPT{i}" for i in range(1, 10)}
)
_REPO_PART = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_])?$")


def _describe(name: str) -> str:
    return ascii(name)[:120]


def safe_relative_path(name: str) -> PurePosixPath:
    """Validate a repo-relative file name from the Hub and return it as a relative path.

    Rejects absolute paths, ``..`` and ``.`` segments, empty segments, backslashes,
    drive letters, control and format characters, characters Windows cannot store,
    names that end in a dot or a space, reserved device names, and over-long names.
    """
    if not isinstance(name, str) or not name:
        raise UnsafePathError("Refusing an empty file name from the Hub.")
    if len(name) > _MAX_PATH:
        raise UnsafePathError(f"Refusing a file name longer than {_MAX_PATH} characters.")
    if name.startswith("/"):
        raise UnsafePathError(f"Refusing an absolute path from the Hub: {_describe(name)}.")
    for ch in name:
        if ch in _FORBIDDEN_CHARS:
            raise UnsafePathError(
                f"Refusing a file name with the character {ch!r}: {_describe(name)}."
            )
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            raise UnsafePathError(
                f"Refusing a file name with a control or invisible character: {_describe(name)}."
            )
    segments = name.split("/")
    for seg in segments:
        if seg in ("", ".", ".."):
            raise UnsafePathError(
                f"Refusing a file name with an empty, '.' or '..' segment: {_describe(name)}."
            )
        if len(seg) > _MAX_SEGMENT:
            raise UnsafePathError(f"Refusing a path segment over {_MAX_SEGMENT} characters.")
        if seg != seg.strip() or seg.endswith("."):
            raise UnsafePathError(
                f"Refusing a name that starts or ends with a space, or ends with a dot: "
                f"{_describe(name)}."
            )
        if seg.split(".")[0].upper() in _WINDOWS_RESERVED:
            raise UnsafePathError(f"Refusing a reserved device name: {_describe(name)}.")
    path = PurePosixPath(*segments)
    if path.is_absolute() or ".." in path.parts:  # defence in depth; checked above
        raise UnsafePathError(f"Refusing an unsafe path: {_describe(name)}.")
    return path


def validate_repo_id(repo_id: str) -> tuple[str, str]:
    """Check an ``owner/name`` repo id and return its two parts."""
    parts = repo_id.split("/") if isinstance(repo_id, str) else []
    if len(parts) != 2 or not all(_REPO_PART.match(p) for p in parts):
        raise UnsafePathError(
            f"{_describe(str(repo_id))} is not a Hugging Face repo id of the form owner/name."
        )
    if any(".." in p or p.upper() in _WINDOWS_RESERVED for p in parts):
        raise UnsafePathError(f"Refusing the repo id {_describe(repo_id)}.")
    return parts[0], parts[1]


def local_model_path(models_dir: Path, repo_id: str, filename: str) -> Path:
    """``<models_dir>/<owner>/<repo>/<file>``, after validating both untrusted parts."""
    owner, name = validate_repo_id(repo_id)
    rel = safe_relative_path(filename)
    return models_dir.joinpath(owner, name, *rel.parts)


# --------------------------------------------------------------------------- quantization

# Longest names first so Q4_K_M wins over Q4_K, IQ2_XXS over IQ2_XS.
_QUANT_NAMES = sorted(
    [
        "F32", "F16", "BF16", "FP16", "FP32", "MXFP4",
        "Q8_0", "Q8_1", "Q6_K", "Q6_K_L", "Q5_0", "Q5_1", "Q5_K", "Q5_K_S", "Q5_K_M",
        "Q5_K_L", "Q5_K_XL", "Q4_0", "Q4_1", "Q4_K", "Q4_K_S", "Q4_K_M", "Q4_K_L",
        "Q4_K_XL", "Q4_0_4_4", "Q4_0_4_8", "Q4_0_8_8", "Q3_K", "Q3_K_S", "Q3_K_M",
        "Q3_K_L", "Q3_K_XL", "Q2_K", "Q2_K_S", "Q2_K_L", "Q2_K_XL", "Q6_K_XL", "Q8_K_XL",
        "IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS", "IQ3_XS",
        "IQ3_S", "IQ3_M", "IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0",
    ],
    key=len,
    reverse=True,
)  # fmt: skip
_ALIASES = {"FP16": "F16", "FP32": "F32"}
_QUANT_RE = re.compile(
    r"(?<![A-Za-z0-9])(?P<ud>UD-)?(?P<q>" + "|".join(_QUANT_NAMES) + r")(?![A-Za-z0-9])",
    re.IGNORECASE,
)
_SHARD_RE = re.compile(r"^(?P<base>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)


def parse_quant(filename: str) -> str | None:
    """The quantization type in a GGUF file name, upper-cased (``Q4_K_M``), or None.

    Looks at the base name only, ignoring the extension and a shard suffix; when the
    name holds several candidates the last one wins (``Q8-model.Q4_K_M.gguf``).
    Unsloth's dynamic quants keep their ``UD-`` prefix.
    """
    stem = PurePosixPath(filename.replace("\\", "/")).name
    shard = _SHARD_RE.match(stem)
    if shard:
        stem = shard.group("base")
    elif stem.lower().endswith(".gguf"):
        stem = stem[: -len(".gguf")]
    found = None
    for match in _QUANT_RE.finditer(stem):
        found = match
    if found is None:
        return None
    quant = found.group("q").upper()
    quant = _ALIASES.get(quant, quant)
    return f"UD-{quant}" if found.group("ud") else quant


@dataclass(frozen=True)
class ShardName:
    """What a split-GGUF name says: ``<base>-00002-of-00005.gguf``."""

    base: str
    index: int
    count: int


def parse_shard(filename: str) -> ShardName | None:
    """Shard position of a split GGUF file name, or None for a single-file model."""
    match = _SHARD_RE.match(filename)
    if not match:
        return None
    index, count = int(match.group("index")), int(match.group("count"))
    if count < 1 or not 1 <= index <= count:
        return None
    return ShardName(match.group("base"), index, count)


def is_gguf(filename: str) -> bool:
    return filename.lower().endswith(".gguf")
