"""The synthesized test models behave like real GGUF models under real llama.cpp."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import gguf
import pytest

import gguf_factory as gf

llama_cpp = pytest.importorskip("llama_cpp")

MODEL_FIXTURES = ["tiny_model_f16", "tiny_model_q8", "tiny_model_q4km"]


def load(path: Path, **kwargs: object) -> llama_cpp.Llama:
    return llama_cpp.Llama(model_path=str(path), n_ctx=256, verbose=False, **kwargs)


@pytest.fixture(scope="module")
def llm(tiny_model_f16: Path) -> Iterator[llama_cpp.Llama]:
    model = load(tiny_model_f16)
    yield model
    model.close()


def piece_id(piece: str) -> int:
    return gf.VOCAB.tokens.index(piece)


# --------------------------------------------------------------------------- files


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    a = gf.write_tiny_llama(tmp_path / "a.gguf", seed=7)
    b = gf.write_tiny_llama(tmp_path / "b.gguf", seed=7)
    c = gf.write_tiny_llama(tmp_path / "c.gguf", seed=8)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


def test_vocab_layout() -> None:
    tokens, types = gf.VOCAB.tokens, gf.VOCAB.types
    assert len(tokens) == len(set(tokens)) == gf.N_VOCAB
    assert tokens[gf.UNK_ID : gf.EOS_ID + 1] == ["<unk>", "<s>", "</s>"]
    assert tokens[gf.BYTE_BASE_ID] == "<0x00>"
    assert tokens[gf.BYTE_BASE_ID + 255] == "<0xFF>"
    assert tokens[gf.IM_END_ID] == gf.IM_END
    assert types[gf.IM_START_ID : gf.FIM_MID_ID + 1] == [gguf.TokenType.CONTROL] * 5


@pytest.mark.parametrize(
    ("fixture", "ftype"),
    [("tiny_model_f16", "F16"), ("tiny_model_q8", "Q8_0"), ("tiny_model_q4km", "Q4_K_M")],
)
def test_file_type_in_metadata(fixture: str, ftype: str, request: pytest.FixtureRequest) -> None:
    path: Path = request.getfixturevalue(fixture)
    model = load(path, vocab_only=True)
    try:
        assert model.metadata["general.file_type"] == str(gf.FILE_TYPES[ftype])
        assert model.metadata["general.name"] == "Hearth Tiny Test"
    finally:
        model.close()


def test_quantized_files_are_smaller(
    tiny_model_f16: Path, tiny_model_q8: Path, tiny_model_q4km: Path
) -> None:
    f16, q8, q4 = (p.stat().st_size for p in (tiny_model_f16, tiny_model_q8, tiny_model_q4km))
    assert q4 < q8 < f16
    kinds = {t.tensor_type for t in gguf.GGUFReader(tiny_model_q4km).tensors}
    assert gguf.GGMLQuantizationType.Q4_K in kinds


# --------------------------------------------------------------------------- tokenizer


def test_loads_with_expected_shape(llm: llama_cpp.Llama) -> None:
    assert llm.n_vocab() == gf.N_VOCAB
    assert llm.n_embd() == gf.TinyLlamaSpec().n_embd
    assert llm.token_bos() == gf.BOS_ID
    assert llm.token_eos() == gf.EOS_ID


@pytest.mark.parametrize("text", ["héllo wörld 🔥", "hello world", "tabs\tand\nnewlines", "日本語"])
def test_utf8_round_trips_through_byte_fallback(llm: llama_cpp.Llama, text: str) -> None:
    tokens = llm.tokenize(text.encode(), add_bos=True)
    assert tokens[0] == gf.BOS_ID
    assert llm.detokenize(tokens) == text.encode()


def test_known_words_merge_and_unknown_chars_fall_back_to_bytes(llm: llama_cpp.Llama) -> None:
    assert llm.tokenize(b"hello world", add_bos=False) == [
        piece_id("\u2581hello"),
        piece_id("\u2581world"),
    ]
    fire = llm.tokenize("🔥".encode(), add_bos=False)
    byte_ids = [gf.BYTE_BASE_ID + b for b in "🔥".encode()]
    assert fire[-4:] == byte_ids


def test_special_tokens_are_single_tokens(llm: llama_cpp.Llama) -> None:
    for text, token_id in [
        (gf.IM_START, gf.IM_START_ID),
        (gf.IM_END, gf.IM_END_ID),
        (gf.FIM_PRE, gf.FIM_PRE_ID),
        (gf.FIM_SUF, gf.FIM_SUF_ID),
        (gf.FIM_MID, gf.FIM_MID_ID),
    ]:
        assert llm.tokenize(text.encode(), add_bos=False, special=True) == [token_id]
        assert len(llm.tokenize(text.encode(), add_bos=False, special=False)) > 1


def test_vocab_special_ids(llm: llama_cpp.Llama) -> None:
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    assert llama_cpp.llama_vocab_eot(vocab) == gf.IM_END_ID
    assert llama_cpp.llama_vocab_fim_pre(vocab) == gf.FIM_PRE_ID
    assert llama_cpp.llama_vocab_fim_suf(vocab) == gf.FIM_SUF_ID
    assert llama_cpp.llama_vocab_fim_mid(vocab) == gf.FIM_MID_ID
    assert llama_cpp.llama_vocab_is_eog(vocab, gf.IM_END_ID)
    assert llama_cpp.llama_vocab_is_eog(vocab, gf.EOS_ID)


def test_chat_template_in_metadata(llm: llama_cpp.Llama) -> None:
    assert llm.metadata["tokenizer.chat_template"] == gf.CHATML_TEMPLATE
    out = llm.create_chat_completion(
        [{"role": "user", "content": "hello"}], max_tokens=4, temperature=0.0
    )
    assert out["usage"]["prompt_tokens"] > 5


# --------------------------------------------------------------------------- generation


@pytest.mark.parametrize("fixture", MODEL_FIXTURES)
def test_greedy_generation(fixture: str, request: pytest.FixtureRequest) -> None:
    model = load(request.getfixturevalue(fixture), seed=0)
    try:
        runs = [
            model.create_completion("hello world", max_tokens=8, temperature=0.0) for _ in range(2)
        ]
    finally:
        model.close()
    first = runs[0]
    assert first["usage"]["completion_tokens"] == 8
    assert first["choices"][0]["finish_reason"] == "length"
    text = first["choices"][0]["text"]
    assert text.isascii()
    assert text.replace("\n", "").isprintable()  # plain_output: no stray byte tokens
    assert runs[1]["choices"][0]["text"] == first["choices"][0]["text"]


_GENERATE_WITH_DEFAULTS = """
import sys, llama_cpp
llm = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=256, verbose=False)
print(llm.create_completion("hello", max_tokens=4, temperature=0.0)["usage"])
"""


def test_default_params_generate_on_quantized(tiny_model_q4km: Path) -> None:
    """Canary for llama.cpp's AMX crash (SIGILL on quantized matmuls on some machines).

    scripts/bootstrap builds without AMX; a subprocess keeps a regression from taking
    pytest down with it.
    """
    proc = subprocess.run(
        [sys.executable, "-c", _GENERATE_WITH_DEFAULTS, str(tiny_model_q4km)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode != -signal.SIGILL, "llama.cpp was built with AMX: see bootstrap"
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_f32_model_and_forced_end(tmp_path: Path) -> None:
    model = load(gf.write_tiny_llama(tmp_path / "f32.gguf", dtype="F32"))
    try:
        assert model.metadata["general.file_type"] == str(gf.FILE_TYPES["F32"])
        out = model.create_completion(
            "hello", max_tokens=8, temperature=0.0, logit_bias={gf.IM_END_ID: 100.0}
        )
    finally:
        model.close()
    assert out["choices"][0]["finish_reason"] == "stop"
    assert out["usage"]["completion_tokens"] == 0


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize("kind", ["truncated", "bad_magic", "header_only"])
def test_corrupt_file_raises(tmp_path: Path, kind: gf.CorruptKind) -> None:
    path = gf.write_corrupt_gguf(tmp_path / f"{kind}.gguf", kind)
    with pytest.raises(ValueError):
        load(path)


def test_quantize_reports_failure(tmp_path: Path) -> None:
    bad = gf.write_corrupt_gguf(tmp_path / "bad.gguf", "bad_magic")
    with pytest.raises(gf.QuantizeError):
        gf.quantize(bad, tmp_path / "out.gguf", "Q8_0")
    with pytest.raises(ValueError, match="unsupported ftype"):
        gf.quantize(bad, tmp_path / "out.gguf", "Q3_XYZ")


def test_isolated_dirs(tmp_path: Path) -> None:
    assert Path(os.environ["HEARTH_DATA_DIR"]).parent == tmp_path
    assert Path(os.environ["HEARTH_CONFIG_DIR"]).is_dir()
    assert os.environ["QT_QPA_PLATFORM"]
