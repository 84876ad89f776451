"""Images into a text model's embedding space: llama.cpp's libmtmd behind typed calls.

A vision model is two files: the text model, and a projector (mmproj) that turns a
picture into a run of embeddings the text model reads in place of tokens. This module
is the only one that talks to libmtmd (``llama_cpp.mtmd_cpp``). It splits a prompt
whose text holds ``IMAGE_MARKER`` where each image stands into runs of text tokens and
image chunks (``tokenize``), and turns one image chunk into its embeddings
(``encode``); the typed prompt it makes is ``media_prompt.py``'s. Decoding the
embeddings into the context is the scheduler's, through ``image_batch.py``'s
``EmbeddingBatch``: at the chunk's positions, with causal attention off for the whole
chunk where ``ImageEmbeddings.non_causal`` says so.

Pictures reach libmtmd as the RGB pixels ``server/image_input.py`` decoded and checked,
never as the client's bytes, and each image chunk is named by ``ImageInput.digest``, as
llama-server names it by a pixel hash: a prefix cache can match an image chunk as one
unit, whatever encoding the picture came in.

Lifetimes: a ``Projector`` borrows the text model's ``llama_model`` (libmtmd tokenizes
the text with its vocabulary), so it must be closed before that model is freed.
``close`` waits for tokenize and encode calls in flight. A ``MediaPrompt`` owns the
native chunks its image chunks point into; close it (or use it as a context manager)
when the request is done. Tokenizing is safe from any thread; encoding runs one call
at a time.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import threading
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from llama_cpp import mtmd_cpp

from hearth.core.errors import EngineFailedError, InvalidRequestError, ModelLoadError
from hearth.core.images import IMAGE_MARKER, ImageInput
from hearth.engine.backend import ensure_backend, log_callback
from hearth.engine.media_prompt import (
    ImageChunk,
    ImageEmbeddings,
    MediaPrompt,
    PromptPart,
    TextRun,
)
from hearth.engine.model import LlamaModel
from hearth.engine.projector_file import check_fits_model, read_projector_file

log = logging.getLogger(__name__)

_mtmd: Any = mtmd_cpp  # untyped ctypes bindings: typed values leave this module only


@functools.cache
def _route_logs() -> None:
    """libmtmd logs through its own callback: send it where llama.cpp's logs go."""
    _mtmd.mtmd_log_set(log_callback(), ctypes.c_void_p(0))


class _NativeChunks:
    """Owns one ``mtmd_input_chunks``. Freed by ``free`` (the prompt's close), or when
    the last reference goes, should a caller forget: never twice, never used after.

    The vision encoder runs on its own thread (image_jobs.py), so a request may end,
    and close its prompt, while one of its images is being encoded: ``free`` then
    leaves the freeing to the last ``held`` call to finish."""

    def __init__(self, pointer: int) -> None:
        self._pointer = pointer
        self._finalizer = weakref.finalize(self, _mtmd.mtmd_input_chunks_free, pointer)
        self._lock = threading.Lock()
        self._users = 0
        self._released = False

    @contextlib.contextmanager
    def held(self, index: int) -> Iterator[int]:
        """Chunk ``index``, valid until the block ends, whoever frees the chunks."""
        with self._lock:
            if self._released or not self._finalizer.alive:
                raise EngineFailedError("The image was released before it was encoded.")
            self._users += 1
        try:
            yield cast(int, _mtmd.mtmd_input_chunks_get(self._pointer, index))
        finally:
            with self._lock:
                self._users -= 1
                last = self._released and self._users == 0
            if last:
                self._finalizer()

    def free(self) -> None:
        with self._lock:
            self._released = True
            if self._users:
                return  # the last held() frees them
        self._finalizer()


class Projector:
    """Owns one libmtmd context for a loaded text model."""

    def __init__(self, context: int, path: Path, n_embd: int) -> None:
        self._ctx = context
        self.path = path
        self.n_embd = n_embd
        self.sees_images = bool(_mtmd.mtmd_support_vision(context))
        self.uses_mrope = bool(_mtmd.mtmd_decode_use_mrope(context))
        """Qwen2-VL-style models (M-RoPE) place image embeddings on a 2D grid: four
        positions per embedding (``grid_positions``), fewer positions than embeddings."""
        self._closed = False
        self._busy = 0  # tokenize/encode calls in flight; close() waits for them
        self._lifetime = threading.Condition()
        self._encoding = threading.Lock()  # the output buffer is the context's own

    @classmethod
    def load(cls, path: Path, model: LlamaModel, *, n_threads: int, use_gpu: bool) -> Projector:
        """Load ``path`` for ``model``; a file that cannot serve it is a clear
        ``ModelLoadError``, found from its header before libmtmd sees it where possible."""
        ensure_backend()
        _route_logs()
        path = Path(path)
        found = read_projector_file(path)
        model_name = Path(model.config.model_path).name
        check_fits_model(found, model_name, model.n_embd)
        params = _mtmd.mtmd_context_params_default()
        params.use_gpu = use_gpu
        params.n_threads = n_threads
        params.print_timings = False
        params.media_marker = IMAGE_MARKER.encode("utf-8")
        context = _mtmd.mtmd_init_from_file(str(path).encode("utf-8"), model.model, params)
        if not context:
            raise ModelLoadError(
                f"llama.cpp could not load the projector {path.name} for {model_name}: "
                f"its type ({found.projector_type}) may be one this llama.cpp does not "
                "know, the file may be damaged, or it belongs to another model. The "
                "log has llama.cpp's reason."
            )
        projector = cls(cast(int, context), path, model.n_embd)
        if not projector.sees_images:
            projector.close()
            raise ModelLoadError(f"The projector {path.name} cannot read images.")
        log.info("projector %s (%s) loaded for %s", path.name, found.projector_type, model_name)
        return projector

    # ------------------------------------------------------------------ lifetime
    def _enter(self) -> None:
        with self._lifetime:
            if self._closed:
                raise EngineFailedError("The model was unloaded; retry the request.")
            self._busy += 1

    def _leave(self) -> None:
        with self._lifetime:
            self._busy -= 1
            if self._busy == 0:
                self._lifetime.notify_all()

    def close(self) -> None:
        """Free the libmtmd context once no call is inside it; later calls raise."""
        with self._lifetime:
            if self._closed:
                return
            self._closed = True
            self._lifetime.wait_for(lambda: self._busy == 0)
        _mtmd.mtmd_free(self._ctx)

    # ------------------------------------------------------------------ tokenize
    def tokenize(
        self, text: str, images: Sequence[ImageInput], *, add_special: bool = True
    ) -> MediaPrompt:
        """Split ``text`` at each ``IMAGE_MARKER`` into text runs and image chunks, the
        i-th marker standing for ``images[i]``. Special tokens in the text are parsed
        (the chat template writes them)."""
        markers = text.count(IMAGE_MARKER)
        if markers != len(images):
            raise InvalidRequestError(
                f"The prompt has {markers} image placeholder(s) for {len(images)} image(s)."
            )
        self._enter()
        try:
            return self._tokenize(text, images, add_special)
        finally:
            self._leave()

    def _tokenize(self, text: str, images: Sequence[ImageInput], add_special: bool) -> MediaPrompt:
        bitmaps: list[int] = []
        try:
            for image in images:
                bitmaps.append(_bitmap(image))
        except BaseException:
            _free_bitmaps(bitmaps)
            raise
        pointer = _mtmd.mtmd_input_chunks_init()
        if not pointer:
            _free_bitmaps(bitmaps)
            raise EngineFailedError("libmtmd could not allocate a prompt.")
        native = _NativeChunks(cast(int, pointer))
        try:
            data = text.encode("utf-8")
            request = _mtmd.mtmd_input_text()
            request.text = data
            request.text_len = len(data)
            request.add_special = add_special
            request.parse_special = True
            array = (_mtmd.mtmd_bitmap_p_ctypes * max(1, len(bitmaps)))(*bitmaps)
            status = int(
                _mtmd.mtmd_tokenize(self._ctx, pointer, ctypes.byref(request), array, len(bitmaps))
            )
        except BaseException:
            native.free()
            raise
        finally:
            _free_bitmaps(bitmaps)  # the chunks hold the preprocessed pixels now
        if status != 0:
            native.free()
            raise InvalidRequestError(_TOKENIZE_ERRORS.get(status, f"libmtmd error {status}"))
        return MediaPrompt(list(self._parts(native, cast(int, pointer))), native)

    def _parts(self, native: _NativeChunks, pointer: int) -> Iterator[PromptPart]:
        for index in range(int(_mtmd.mtmd_input_chunks_size(pointer))):
            chunk = _mtmd.mtmd_input_chunks_get(pointer, index)
            kind = int(_mtmd.mtmd_input_chunk_get_type(chunk))
            if kind == _mtmd.MTMD_INPUT_CHUNK_TYPE_TEXT:
                count = ctypes.c_size_t(0)
                tokens = _mtmd.mtmd_input_chunk_get_tokens_text(chunk, ctypes.byref(count))
                yield TextRun(tuple(int(tokens[i]) for i in range(count.value)))
            elif kind == _mtmd.MTMD_INPUT_CHUNK_TYPE_IMAGE:
                raw_id = _mtmd.mtmd_input_chunk_get_id(chunk)
                yield ImageChunk(
                    id=raw_id.decode("ascii") if raw_id else "",
                    n_tokens=int(_mtmd.mtmd_input_chunk_get_n_tokens(chunk)),
                    n_pos=int(_mtmd.mtmd_input_chunk_get_n_pos(chunk)),
                    non_causal=bool(_mtmd.mtmd_decode_use_non_causal(self._ctx, chunk)),
                    index=index,
                    source=native,
                )
            else:  # only images are handed in, so libmtmd makes no other kind
                raise EngineFailedError(f"libmtmd made an unexpected chunk (type {kind}).")

    # ------------------------------------------------------------------ encode
    def encode(self, chunk: ImageChunk) -> ImageEmbeddings:
        """Run the vision encoder on one image chunk: its embeddings, copied out of
        libmtmd's buffer (the next encode overwrites that)."""
        self._enter()
        try:
            with chunk.source.held(chunk.index) as native, self._encoding:
                status = int(_mtmd.mtmd_encode_chunk(self._ctx, native))
                if status != 0:
                    raise EngineFailedError(f"The vision encoder failed (libmtmd {status}).")
                output = _mtmd.mtmd_get_output_embd(self._ctx)
                if not output:
                    raise EngineFailedError("The vision encoder returned no embeddings.")
                count = chunk.n_tokens * self.n_embd
                flat = np.ctypeslib.as_array(output, shape=(count,))
                values = flat.reshape(chunk.n_tokens, self.n_embd).astype(np.float32, copy=True)
        finally:
            self._leave()
        return ImageEmbeddings(chunk_id=chunk.id, values=values, non_causal=chunk.non_causal)


    def grid_positions(self, chunk: ImageChunk, pos_0: int) -> npt.NDArray[np.int32]:
        """An M-RoPE image's positions from ``pos_0``, as libmtmd lays them out for its
        model: int32 [4, n_tokens], the sections in the order the text model reads them
        (time, row, column, spare)."""
        self._enter()
        try:
            with chunk.source.held(chunk.index) as native:
                image = _mtmd.mtmd_input_chunk_get_tokens_image(native)
                if not image:
                    raise EngineFailedError("libmtmd has no image in an image chunk.")
                out = (_mtmd.mtmd_decoder_pos * chunk.n_tokens)()
                _mtmd.mtmd_helper_image_get_decoder_pos(image, pos_0, out)
        finally:
            self._leave()
        grid = np.ctypeslib.as_array(out).view(np.uint32).reshape(chunk.n_tokens, 4)
        # mtmd_decoder_pos is (t, x, y, z); the text model's sections are (t, y, x, z)
        return np.ascontiguousarray(grid[:, [0, 2, 1, 3]].T, dtype=np.int32)


_TOKENIZE_ERRORS = {
    1: "The number of image placeholders does not match the number of images.",
    2: "The image could not be prepared for the model's vision encoder.",
}


def _bitmap(image: ImageInput) -> int:
    """A libmtmd bitmap of ``image``'s RGB pixels (libmtmd copies them), named by the
    picture's digest so equal pictures make equal chunks."""
    if len(image.rgb) != image.width * image.height * 3:
        raise InvalidRequestError(f"{image!r} has {len(image.rgb)} bytes of pixels.")
    pixels = ctypes.cast(ctypes.c_char_p(image.rgb), ctypes.POINTER(ctypes.c_uint8))
    bitmap = _mtmd.mtmd_bitmap_init(image.width, image.height, pixels)
    if not bitmap:
        raise EngineFailedError(f"libmtmd could not take {image!r}.")
    _mtmd.mtmd_bitmap_set_id(bitmap, image.digest.encode("ascii"))
    return cast(int, bitmap)


def _free_bitmaps(bitmaps: Sequence[int]) -> None:
    for bitmap in bitmaps:
        _mtmd.mtmd_bitmap_free(bitmap)
