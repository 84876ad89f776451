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
