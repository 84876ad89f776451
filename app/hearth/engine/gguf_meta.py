"""What a GGUF model file says about itself: its header, its metadata, its special tokens."""

from __future__ import annotations

import ctypes
import logging
from dataclasses import dataclass
from pathlib import Path

import llama_cpp

from hearth.core.errors import ModelLoadError

log = logging.getLogger(__name__)


def check_gguf_header(path: Path) -> None:
    """Fail early, with a message a person understands, before llama.cpp sees the file."""
    if not path.exists():
        raise ModelLoadError(f"Model file not found: {path}")
    if not path.is_file():
        raise ModelLoadError(f"Not a file: {path}")
    with path.open("rb") as handle:
        magic = handle.read(4)
    if magic != b"GGUF":
        raise ModelLoadError(
            f"{path.name} is not a GGUF model file (it does not start with the GGUF "
            "signature). Pick a .gguf file made for llama.cpp."
        )


@dataclass(frozen=True)
class SpecialTokens:
    """The vocabulary's fixed special tokens, copied out of llama.cpp at load, so that
    request threads asking for them never call into a vocabulary being freed."""

    bos: int
    eos: int
    add_bos: bool
    fim: tuple[int, int, int] | None
    fim_rep: int = -1  # repository-level FIM tokens (Qwen2.5-Coder); -1 when absent
    fim_sep: int = -1

    @classmethod
    def read(cls, vocab: llama_cpp.llama_vocab_p) -> SpecialTokens:
        pre = int(llama_cpp.llama_vocab_fim_pre(vocab))
        suf = int(llama_cpp.llama_vocab_fim_suf(vocab))
        mid = int(llama_cpp.llama_vocab_fim_mid(vocab))
        return cls(
            bos=int(llama_cpp.llama_vocab_bos(vocab)),
            eos=int(llama_cpp.llama_vocab_eos(vocab)),
            add_bos=bool(llama_cpp.llama_vocab_get_add_bos(vocab)),
            fim=None if min(pre, suf, mid) < 0 else (pre, suf, mid),
            fim_rep=int(llama_cpp.llama_vocab_fim_rep(vocab)),
            fim_sep=int(llama_cpp.llama_vocab_fim_sep(vocab)),
        )


def read_metadata(model: llama_cpp.llama_model_p) -> dict[str, str]:
    """Every key of the GGUF metadata, as strings (llama.cpp renders the values)."""
    result: dict[str, str] = {}
    buffer = ctypes.create_string_buffer(4096)
    for index in range(llama_cpp.llama_model_meta_count(model)):
        n = llama_cpp.llama_model_meta_key_by_index(model, index, buffer, len(buffer))
        if n < 0:
            continue
        key = buffer.value.decode("utf-8", errors="replace")
        n = llama_cpp.llama_model_meta_val_str_by_index(model, index, None, 0)
        if n < 0:
            continue
        value_buffer = ctypes.create_string_buffer(n + 1)
        llama_cpp.llama_model_meta_val_str_by_index(model, index, value_buffer, n + 1)
        result[key] = value_buffer.value.decode("utf-8", errors="replace")
    return result


def check_model_shape(metadata: dict[str, str], file_name: str) -> None:
    """Refuse shapes that llama.cpp loads but then aborts on (a ``GGML_ASSERT`` that takes
    the worker with it): a Qwen3-VL text model with as many deepstack layers as blocks or
    more adds a deepstack slice after its last block, on every decode, text included."""
    arch = metadata.get("general.architecture", "")
    deepstack = _int_or_none(metadata.get(f"{arch}.n_deepstack_layers"))
    blocks = _int_or_none(metadata.get(f"{arch}.block_count"))
    if deepstack and blocks is not None and deepstack >= blocks:
        raise ModelLoadError(
            f"{file_name} is malformed: it declares {deepstack} deepstack layers for "
            f"{blocks} blocks (there must be fewer). Re-download the model or pick another file."
        )


def _int_or_none(value: str | None) -> int | None:
    try:
        return None if value is None else int(value)
    except ValueError:
        return None
