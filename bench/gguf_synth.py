"""A synthetic llama GGUF with the shape of a 250M-parameter model, for benchmarks.

The weights are seeded random numbers: the model talks nonsense, but it costs llama.cpp
exactly what a real model of this shape costs. The vocabulary is a byte-fallback
SentencePiece one padded with ordinary pieces to 32,000 tokens, so the embedding and
output matrices have the real size and English text tokenizes at a realistic rate.

Output rows of every non-normal token (control and byte tokens) are zero, so greedy
decoding only ever emits printable pieces and each token streams as one text chunk.

The writer is the test suite's (tests/gguf_factory.py), so the bench model is laid out
exactly like the tiny test model; only the shape, vocabulary and name are set here.
"""

from __future__ import annotations

import itertools
import string
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

TESTS = Path(__file__).resolve().parents[1] / "tests"
if str(TESTS) not in sys.path:
    sys.path.append(str(TESTS))  # after site-packages: tests/hearth.py must not shadow hearth

import gguf_factory as gf  # noqa: E402

CACHE_DIR = Path.home() / ".cache" / "hearth-bench"
MODEL_VERSION = 1  # bump when anything below changes the file

N_VOCAB = 32000
SPEC = gf.LlamaSpec(n_embd=1024, n_ff=2816, n_layer=16, n_head=16, n_head_kv=4, context_length=4096)

_TEXT = (
    "the of and to in is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there been one all we their has would when "
    "if will more no out so said what up its about into than them can only other new "
    "some could time these two may then do first any my now such like our over man me "
    "even most made after also did many before must through back years where much your "
    "way well down should because each just those people how too little state good very "
    "make world still own see men work long get here between both life being under never "
    "day same another know while last might us great old year off come since against go "
    "came right used take three model token request server stream prompt cache slot "
    "batch decode engine client benchmark hearth llama"
)
_WORDS = _TEXT.split()


def _normal_pieces() -> Iterator[str]:
    """Pieces in preference order; every piece's prefixes come before it (SPM merges)."""
    lower, upper = string.ascii_lowercase, string.ascii_uppercase
    yield "\u2581"
    yield from lower + upper + string.digits + string.punctuation
    for word in _WORDS:
        yield from gf.prefixes("\u2581" + word)
        yield from gf.prefixes(word)
    for a in lower + upper:
        yield "\u2581" + a
    for a, b in itertools.product(lower, repeat=2):
        yield a + b
        yield "\u2581" + a + b
    for a, b in itertools.product(upper, lower):
        yield "\u2581" + a + b
    for a, b, c in itertools.product(lower, repeat=3):
        yield a + b + c
        yield "\u2581" + a + b + c


def build_vocab(n_vocab: int = N_VOCAB) -> gf.Vocab:
    """ChatML controls but no FIM tokens, then ``n_vocab`` pieces in all."""
    return gf.make_vocab([gf.IM_START, gf.IM_END], _normal_pieces(), n_vocab)


def write_f16(
    path: Path, spec: gf.LlamaSpec = SPEC, *, n_vocab: int = N_VOCAB, seed: int = 0
) -> Path:
    """Write the unquantized model (about 0.5 GB for the default shape)."""
    vocab = build_vocab(n_vocab)
    return gf.write_llama(
        path, spec, vocab, name="Hearth Bench 250M", seed=seed, quiet_rows=gf.non_normal_rows(vocab)
    )


def ensure_bench_model(cache_dir: Path = CACHE_DIR) -> Path:
    """The cached Q4_K_M bench model, synthesized on first use (about a minute)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    dst = cache_dir / f"hearth-bench-250m-v{MODEL_VERSION}-Q4_K_M.gguf"
    if dst.exists():
        return dst
    f16 = cache_dir / f"hearth-bench-250m-v{MODEL_VERSION}-F16.gguf.tmp"
    partial = dst.with_suffix(".gguf.partial")
    try:
        write_f16(f16)
        gf.quantize(f16, partial, "Q4_K_M")
        partial.replace(dst)
    finally:
        f16.unlink(missing_ok=True)
        partial.unlink(missing_ok=True)
    return dst


# --------------------------------------------------------------------------- speculative pair

SPEC_VERSION = 1  # bump when anything below changes the files
SPEC_N_VOCAB = 8000  # small, so the output matmul does not dominate the draft's cost
SPEC_TARGET = gf.LlamaSpec(n_embd=512, n_ff=1536, n_layer=32, n_head=8, n_head_kv=4)
SPEC_DRAFT_LAYERS = 2


def ensure_spec_models(noise: float, cache_dir: Path = CACHE_DIR) -> dict[str, Path]:
    """Q8_0 models for bench/speculative.py, synthesized on first use and cached.

    ``target``: 32 blocks of which 2-31 write nothing, so it predicts what ``draft`` (its
    first 2 blocks, same embedding and output matrix) predicts at 16 times the cost;
    ``noisy``: the same target with the dead blocks writing ``noise`` times their random
    output, which lowers acceptance; ``unrelated``: a 2-block draft of another seed.
    One uniform type (Q8_0) so the draft's shared tensors stay bit-identical.
    """
    folder = cache_dir / f"spec-v{SPEC_VERSION}"
    folder.mkdir(parents=True, exist_ok=True)
    names = {"target": "target", "draft": "draft", "unrelated": "unrelated",
             "noisy": f"noisy-{noise:g}"}  # fmt: skip
    paths = {k: folder / f"{v}-Q8_0.gguf" for k, v in names.items()}
    vocab = build_vocab(SPEC_N_VOCAB)
    quiet = gf.non_normal_rows(vocab)
    small = gf.LlamaSpec(**{**SPEC_TARGET.__dict__, "n_layer": SPEC_DRAFT_LAYERS})
    writers = {
        "target": lambda p: gf.damp_blocks(_write(p, SPEC_TARGET, vocab, quiet, 0), _dead(), 0.0),
        "draft": lambda p: _write(p, small, vocab, quiet, 0),
        "unrelated": lambda p: _write(p, small, vocab, quiet, 1),
        "noisy": lambda p: gf.damp_blocks(_write(p, SPEC_TARGET, vocab, quiet, 0), _dead(), noise),
    }
    for key, path in paths.items():
        if path.exists():
            continue
        f16 = path.with_suffix(".f16.tmp")
        try:
            writers[key](f16)
            gf.quantize(f16, path.with_suffix(".partial"), "Q8_0")
            path.with_suffix(".partial").replace(path)
        finally:
            f16.unlink(missing_ok=True)
            path.with_suffix(".partial").unlink(missing_ok=True)
    return paths


def _dead() -> range:
    return range(SPEC_DRAFT_LAYERS, SPEC_TARGET.n_layer)


def _write(path: Path, spec: gf.LlamaSpec, vocab: gf.Vocab, quiet: np.ndarray, seed: int) -> Path:
    return gf.write_llama(path, spec, vocab, name="Hearth Spec Bench", seed=seed, quiet_rows=quiet)
