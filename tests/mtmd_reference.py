"""A reference run of a vision prompt through llama-cpp-python's own libmtmd path.

Run as a script in a fresh process (``python tests/mtmd_reference.py REQUEST.json``):
it loads the model and projector with the bare ctypes bindings, tokenizes the prompt
with ``mtmd_tokenize``, evaluates every chunk with ``mtmd_helper_eval_chunks`` (which
places M-RoPE images on their grid and advances ``n_past`` by each chunk's positions),
then decodes greedily, one token at a time from the ``n_past`` libmtmd returned. None
of Hearth's engine is used, so the engine's replies can be checked against it.

The request file holds: ``model``, ``projector``, ``prompt`` (with ``marker`` where
each image stands), ``images`` (each ``{"rgb": path, "width", "height",
"id"}``), ``max_tokens`` and ``banned`` (token ids never picked, as a logit bias of -100
would make them). It prints one JSON line: the reply's ``text``, and the prompt's
``n_tokens`` and ``n_pos`` as libmtmd counts them.
"""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp import mtmd_cpp

_mtmd: Any = mtmd_cpp


def _silence() -> None:
    @ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
    def quiet(level: int, text: bytes, data: object) -> None:
        return None

    _silence.callback = quiet  # type: ignore[attr-defined]  # kept alive
    llama_cpp.llama_log_set(quiet, ctypes.c_void_p(0))
    _mtmd.mtmd_log_set(quiet, ctypes.c_void_p(0))


def main(request_path: str) -> None:
    request = json.loads(Path(request_path).read_text())
    _silence()
    llama_cpp.llama_backend_init()
    mparams = llama_cpp.llama_model_default_params()
    mparams.n_gpu_layers = 0
    model = llama_cpp.llama_model_load_from_file(request["model"].encode(), mparams)
    cparams = llama_cpp.llama_context_default_params()
    cparams.n_ctx = 2048
    cparams.n_batch = 512
    cparams.n_ubatch = 512
    cparams.n_threads = cparams.n_threads_batch = 2
    ctx = llama_cpp.llama_init_from_model(model, cparams)
    vocab = llama_cpp.llama_model_get_vocab(model)
    n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)

    params = _mtmd.mtmd_context_params_default()
    params.use_gpu = False
    params.n_threads = 2
    params.print_timings = False
    marker = request["marker"].encode()  # kept alive while libmtmd reads it
    params.media_marker = marker
    mctx = _mtmd.mtmd_init_from_file(request["projector"].encode(), model, params)
    assert mctx, "libmtmd could not load the projector"

    bitmaps = []
    for image in request["images"]:
        rgb = Path(image["rgb"]).read_bytes()
        pixels = ctypes.cast(ctypes.c_char_p(rgb), ctypes.POINTER(ctypes.c_uint8))
        bitmap = _mtmd.mtmd_bitmap_init(image["width"], image["height"], pixels)
        _mtmd.mtmd_bitmap_set_id(bitmap, image["id"].encode())
        bitmaps.append(bitmap)
    chunks = _mtmd.mtmd_input_chunks_init()
    text = _mtmd.mtmd_input_text()
    data = request["prompt"].encode()
    text.text, text.text_len, text.add_special, text.parse_special = data, len(data), True, True
    array = (_mtmd.mtmd_bitmap_p_ctypes * max(1, len(bitmaps)))(*bitmaps)
    status = _mtmd.mtmd_tokenize(mctx, chunks, ctypes.byref(text), array, len(bitmaps))
    assert status == 0, f"mtmd_tokenize: {status}"

    n_past = llama_cpp.llama_pos(0)
    status = _mtmd.mtmd_helper_eval_chunks(mctx, ctx, chunks, 0, 0, 512, True, ctypes.byref(n_past))
    assert status == 0, f"mtmd_helper_eval_chunks: {status}"
    pos = int(n_past.value)

    banned = list(request.get("banned", []))
    batch = llama_cpp.llama_batch_init(1, 0, 1)
    pieces: list[bytes] = []
    buffer = ctypes.create_string_buffer(256)
    for _ in range(int(request["max_tokens"])):
        row = llama_cpp.llama_get_logits_ith(ctx, -1)
        logits = np.ctypeslib.as_array(row, shape=(n_vocab,)).copy()
        logits[banned] = -np.inf
        token = int(logits.argmax())
        if llama_cpp.llama_vocab_is_eog(vocab, token):
            break
        size = llama_cpp.llama_token_to_piece(vocab, token, buffer, len(buffer), 0, False)
        pieces.append(buffer.raw[:size])
        batch.n_tokens = 1
        batch.token[0], batch.pos[0], batch.n_seq_id[0] = token, pos, 1
        batch.seq_id[0][0], batch.logits[0] = 0, True
        assert llama_cpp.llama_decode(ctx, batch) == 0
        pos += 1
    print(json.dumps({
        "text": b"".join(pieces).decode("utf-8", "replace"),
        "n_tokens": int(_mtmd.mtmd_helper_get_n_tokens(chunks)),
        "n_pos": int(_mtmd.mtmd_helper_get_n_pos(chunks)),
    }))  # fmt: skip
    llama_cpp.llama_batch_free(batch)
    _mtmd.mtmd_input_chunks_free(chunks)
    for bitmap in bitmaps:
        _mtmd.mtmd_bitmap_free(bitmap)
    _mtmd.mtmd_free(mctx)
    llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(model)


if __name__ == "__main__":
    main(sys.argv[1])
