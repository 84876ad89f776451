"""A loaded llama.cpp model and its context, wrapped in typed methods.

Everything here calls llama.cpp through llama-cpp-python's low-level ctypes API. The
context is not thread-safe: only the scheduler thread may decode. Tokenizing and
reading the vocabulary are read-only and safe from other threads, as long as the model
is alive: every vocabulary read counts itself as a reader, and ``close`` waits for the
readers to leave before it frees anything. Each thread has its own piece buffer, as
ctypes calls release the GIL and two threads must never write into one buffer.
"""

from __future__ import annotations

import ctypes
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

import llama_cpp

from hearth.core.attention import auto_turns_flash_attention_off
from hearth.core.errors import EngineFailedError, LoadCancelledError, ModelLoadError
from hearth.core.model_info import FlashAttention, LoadConfig, ModelInfo, SplitMode
from hearth.core.quantization import file_type_name
from hearth.engine.backend import ensure_backend, resolve_threads
from hearth.engine.cache_types import ggml_type_for
from hearth.engine.devices import list_devices, offloaded_layers
from hearth.engine.gguf_meta import (
    SpecialTokens,
    check_gguf_header,
    check_model_shape,
    read_metadata,
)
from hearth.engine.grammar import check_grammar

log = logging.getLogger(__name__)

_SPLIT_MODES = {
    SplitMode.NONE: llama_cpp.LLAMA_SPLIT_MODE_NONE,
    SplitMode.LAYER: llama_cpp.LLAMA_SPLIT_MODE_LAYER,
    SplitMode.ROW: llama_cpp.LLAMA_SPLIT_MODE_ROW,
}

_FLASH_ATTN = {
    FlashAttention.AUTO: llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO,
    FlashAttention.ON: llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED,
    FlashAttention.OFF: llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED,
}

ProgressCallback = Callable[[float], None]


class LlamaModel:
    """Owns one ``llama_model`` and one ``llama_context`` for the life of a load."""

    def __init__(
        self,
        config: LoadConfig,
        *,
        on_progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        ensure_backend()
        self.config = config
        self._closed = False
        self._readers = 0  # threads inside a vocabulary call; close() waits for them
        self._lifetime = threading.Condition()
        self._pieces = threading.local()
        self._tensor_split: ctypes.Array[ctypes.c_float] | None = None
        path = Path(config.model_path)
        check_gguf_header(path)
        self._model = self._load_model(path, on_progress, cancel)
        try:
            self.metadata = read_metadata(self._model)
            check_model_shape(self.metadata, path.name)
            self.n_ctx_train = int(llama_cpp.llama_model_n_ctx_train(self._model))
            self.n_ctx = self._context_per_slot()
            self._vocab = llama_cpp.llama_model_get_vocab(self._model)
            self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(self._vocab))
            # the width of one input embedding: what a vision projector must produce
            self.n_embd = int(llama_cpp.llama_model_n_embd_inp(self._model))
            self._ctx = self._create_context()
        except BaseException:
            llama_cpp.llama_model_free(self._model)
            raise
        self.memory = llama_cpp.llama_get_memory(self._ctx)
        self.n_slots = config.n_parallel
        self.n_ctx_per_slot = int(llama_cpp.llama_n_ctx_seq(self._ctx))
        self._special = SpecialTokens.read(self._vocab)  # read once: callers on any thread

    # ------------------------------------------------------------------ loading
    def _load_model(
        self, path: Path, on_progress: ProgressCallback | None, cancel: threading.Event | None
    ) -> llama_cpp.llama_model_p:
        params = llama_cpp.llama_model_default_params()
        params.n_gpu_layers = self.config.n_gpu_layers
        params.main_gpu = self.config.main_gpu
        params.split_mode = _SPLIT_MODES[self.config.split_mode]
        split = self.config.tensor_split
        if split:
            n_max = int(llama_cpp.llama_max_devices())
            if len(split) > n_max:
                raise ModelLoadError(f"--tensor-split names {len(split)} GPUs; at most {n_max}.")
            self._tensor_split = (ctypes.c_float * n_max)(*split)  # kept alive while loading
            params.tensor_split = self._tensor_split
        if self.config.use_mmap and self.config.use_mlock:
            params.load_mode = llama_cpp.LLAMA_LOAD_MODE_MMAP_MLOCK
        elif self.config.use_mlock:
            params.load_mode = llama_cpp.LLAMA_LOAD_MODE_MLOCK
        elif self.config.use_mmap:
            params.load_mode = llama_cpp.LLAMA_LOAD_MODE_MMAP
        else:
            params.load_mode = llama_cpp.LLAMA_LOAD_MODE_NONE

        def progress(fraction: float, _user_data: ctypes.c_void_p) -> bool:
            if on_progress is not None:
                try:
                    on_progress(float(fraction))
                except Exception:
                    log.exception("progress callback failed")
            return not (cancel is not None and cancel.is_set())

        callback = llama_cpp.llama_progress_callback(progress)
        params.progress_callback = callback
        started = time.perf_counter()
        model = llama_cpp.llama_model_load_from_file(str(path).encode("utf-8"), params)
        if not model:
            if cancel is not None and cancel.is_set():
                raise LoadCancelledError("Model loading was cancelled.")
            raise ModelLoadError(
                f"llama.cpp could not load {path.name}. The file may be truncated or "
                "corrupt, use an architecture this llama.cpp does not support, or need "
                "more memory than is free. Re-download or pick another file."
            )
        log.info("loaded %s in %.2f s", path.name, time.perf_counter() - started)
        return cast("llama_cpp.llama_model_p", model)

    def _context_per_slot(self) -> int:
        """The context asked for, or the default; past the trained context, a warning:
        such a model usually degrades (repeats, loses the thread) beyond it."""
        n_ctx = self.config.context_for(self.n_ctx_train)
        if self.config.n_ctx is not None and 0 < self.n_ctx_train < n_ctx:
            log.warning(
                "context of %d tokens per slot is larger than the %d tokens %s was trained "
                "on; output may degrade past %d tokens",
                n_ctx,
                self.n_ctx_train,
                Path(self.config.model_path).name,
                self.n_ctx_train,
            )
        elif self.config.n_ctx is None:
            log.info("context per slot: %d tokens (trained: %d)", n_ctx, self.n_ctx_train)
        return n_ctx

    def _create_context(self) -> llama_cpp.llama_context_p:
        cfg = self.config
        if cfg.n_batch < cfg.n_parallel:  # every decoding slot puts a token in each batch
            raise ModelLoadError(
                f"The batch size ({cfg.n_batch}) must be at least the number of parallel "
                f"slots ({cfg.n_parallel})."
            )
        params = llama_cpp.llama_context_default_params()
        params.n_seq_max = cfg.n_parallel
        params.n_ctx = self.n_ctx * cfg.n_parallel
        params.n_batch = cfg.n_batch
        params.n_ubatch = min(cfg.n_ubatch, cfg.n_batch)
        params.n_threads = resolve_threads(cfg.n_threads)
        params.n_threads_batch = resolve_threads(cfg.n_threads_batch or cfg.n_threads)
        params.flash_attn_type = self.flash_attn_type = self._flash_attention_type()
        params.type_k = ggml_type_for(cfg.cache_type_k)
        params.type_v = ggml_type_for(cfg.cache_type_v)
        params.kv_unified = cfg.kv_unified
        # Sliding-window layers keep every position, not just the last window: a slot's
        # KV can then be cut back to any prefix, and saved prompt states restored.
        params.swa_full = self.swa_full = True
        params.no_perf = True
        ctx = llama_cpp.llama_init_from_model(self._model, params)
        if not ctx:
            raise ModelLoadError(
                "llama.cpp could not create a context of "
                f"{self.n_ctx} tokens x {cfg.n_parallel} slots. Lower the context size or "
                "the number of parallel slots, or offload fewer layers to the GPU."
            )
        return cast("llama_cpp.llama_context_p", ctx)

    def _flash_attention_type(self) -> int:
        """llama.cpp's setting for this load, with Hearth's meaning of "auto" applied."""
        cfg = self.config
        if cfg.flash_attention is not FlashAttention.AUTO:
            return _FLASH_ATTN[cfg.flash_attention]
        n_layer = int(llama_cpp.llama_model_n_layer(self._model))
        off = auto_turns_flash_attention_off(
            gpu_offload=offloaded_layers(cfg.n_gpu_layers, n_layer, list_devices()) > 0,
            cache_type_v=cfg.cache_type_v,
            n_ctx=self.n_ctx,
            n_slots=cfg.n_parallel,
            kv_unified=cfg.kv_unified,
            n_batch=cfg.n_batch,
            n_ubatch=cfg.n_ubatch,
            n_head=int(llama_cpp.llama_model_n_head(self._model)),
        )
        if off:
            log.info("flash attention auto: off (CPU only, %d-token context)", self.n_ctx)
            return llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
        return llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO

    # ------------------------------------------------------------------ vocabulary
    def _enter(self) -> None:
        with self._lifetime:
            if self._closed:
                raise EngineFailedError("The model was unloaded; retry the request.")
            self._readers += 1

    def _leave(self) -> None:
        with self._lifetime:
            self._readers -= 1
            if self._readers == 0:
                self._lifetime.notify_all()

    def tokenize(self, text: str, *, add_special: bool, parse_special: bool) -> list[int]:
        self._enter()
        try:
            return self._tokenize(text, add_special=add_special, parse_special=parse_special)
        finally:
            self._leave()

    def _tokenize(self, text: str, *, add_special: bool, parse_special: bool) -> list[int]:
        data = text.encode("utf-8")
        capacity = len(data) + 8
        tokens = (llama_cpp.llama_token * capacity)()
        n = llama_cpp.llama_tokenize(
            self._vocab, data, len(data), tokens, capacity, add_special, parse_special
        )
        if n < 0:
            capacity = -n
            tokens = (llama_cpp.llama_token * capacity)()
            n = llama_cpp.llama_tokenize(
                self._vocab, data, len(data), tokens, capacity, add_special, parse_special
            )
        return list(tokens[:n])

    def check_grammar(self, grammar: str) -> None:
        """Compile ``grammar`` against this vocabulary (raises a clear 400 if it doesn't
        compile), counted as a read so that an unload waits for it."""
        self._enter()
        try:
            check_grammar(self._vocab, grammar)
        finally:
            self._leave()

    def token_bytes(self, token: int, *, special: bool = False) -> bytes:
        """The raw bytes of one token (may be part of a UTF-8 character)."""
        self._enter()
        try:
            return self._token_bytes(token, special)
        finally:
            self._leave()

    def _token_bytes(self, token: int, special: bool) -> bytes:
        buffer: ctypes.Array[ctypes.c_char] | None = getattr(self._pieces, "buffer", None)
        if buffer is None:  # this thread's own, reused for every later piece
            buffer = self._pieces.buffer = ctypes.create_string_buffer(256)
        n = llama_cpp.llama_token_to_piece(self._vocab, token, buffer, len(buffer), 0, special)
        if n < 0:
            buffer = ctypes.create_string_buffer(-n)
            n = llama_cpp.llama_token_to_piece(self._vocab, token, buffer, len(buffer), 0, special)
        return buffer.raw[:n]

    def token_text(self, token: int) -> str:
        if token < 0:
            return ""
        return self.token_bytes(token, special=True).decode("utf-8", errors="replace")

    def marker_tokens(self) -> dict[int, str]:
        """Id to text of the control and user-defined tokens (``<think>``, ``<|channel|>``,
        ``[TOOL_CALLS]`` ...): what tool-call and reasoning detection look for, and the
        tokens a reply must keep as text to be parsed. One pass over the vocabulary."""
        wanted = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED
        found: dict[int, str] = {}
        self._enter()
        try:
            for token in range(self.n_vocab):
                if int(llama_cpp.llama_vocab_get_attr(self._vocab, token)) & wanted:
                    found[token] = self._token_bytes(token, True).decode("utf-8", "replace")
        finally:
            self._leave()
        return found

    def is_eog(self, token: int) -> bool:
        return bool(llama_cpp.llama_vocab_is_eog(self._vocab, token))

    @property
    def bos(self) -> int:
        return self._special.bos

    @property
    def eos(self) -> int:
        return self._special.eos

    @property
    def add_bos(self) -> bool:
        return self._special.add_bos

    def fim_tokens(self) -> tuple[int, int, int] | None:
        return self._special.fim

    def fim_repo_tokens(self) -> tuple[int | None, int | None]:
        """The repository-name and file-separator FIM tokens, where the model has them."""
        rep, sep = self._special.fim_rep, self._special.fim_sep
        return (rep if rep >= 0 else None), (sep if sep >= 0 else None)

    # ------------------------------------------------------------------ handles
    @property
    def ctx(self) -> llama_cpp.llama_context_p:
        return self._ctx

    @property
    def model(self) -> llama_cpp.llama_model_p:
        return self._model

    @property
    def vocab(self) -> llama_cpp.llama_vocab_p:
        return cast("llama_cpp.llama_vocab_p", self._vocab)

    def info(self, model_id: str) -> ModelInfo:
        path = Path(self.config.model_path)
        n_layer = int(llama_cpp.llama_model_n_layer(self._model))
        devices = list_devices()
        return ModelInfo(
            id=model_id,
            path=path,
            architecture=self.metadata.get("general.architecture", "unknown"),
            n_params=int(llama_cpp.llama_model_n_params(self._model)),
            size_bytes=int(llama_cpp.llama_model_size(self._model)),
            quantization=file_type_name(self.metadata.get("general.file_type")) or "unknown",
            n_ctx_train=self.n_ctx_train,
            n_ctx_per_slot=self.n_ctx_per_slot,
            n_slots=self.n_slots,
            n_vocab=self.n_vocab,
            chat_template=self.metadata.get("tokenizer.chat_template"),
            has_fim=self.fim_tokens() is not None,
            created=int(path.stat().st_mtime),
            n_layer=n_layer,
            gpu_layers=offloaded_layers(self.config.n_gpu_layers, n_layer, devices),
            devices=devices,
        )

    def close(self) -> None:
        """Free the context and model once no thread is reading the vocabulary; later
        reads raise ``EngineFailedError`` instead of touching freed memory."""
        with self._lifetime:
            if self._closed:
                return
            self._closed = True
            self._lifetime.wait_for(lambda: self._readers == 0)
        llama_cpp.llama_free(self._ctx)
        llama_cpp.llama_model_free(self._model)
