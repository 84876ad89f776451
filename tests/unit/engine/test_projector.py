"""The vision projector behind engine/projector.py: real libmtmd, a real (synthetic)
gemma3 projector, the tiny llama it was made for, pictures decoded as a request's are.

Loading and encoding were first proven in a child process (test_projector_process.py),
so an abort in libmtmd shows there as a failed test before it could take these down.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import llama_cpp
import numpy as np
import pytest
from PIL import Image

import gguf_projector
from hearth.core.errors import EngineFailedError, InvalidRequestError, ModelLoadError
from hearth.core.images import IMAGE_MARKER, ImageInput
from hearth.core.model_info import LoadConfig
from hearth.engine.image_batch import EmbeddingBatch
from hearth.engine.media_prompt import ImageChunk, ImageEmbeddings, MediaPrompt, TextRun
from hearth.engine.model import LlamaModel
from hearth.engine.projector import Projector
from hearth.server.image_input import decode

SPEC = gguf_projector.ProjectorSpec()
N_IMAGE = SPEC.n_image_tokens


def picture(seed: int, fmt: str = "PNG", size: tuple[int, int] = (120, 80)) -> ImageInput:
    """Seeded noise, encoded as ``fmt`` and decoded as the server decodes a request's."""
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    data = io.BytesIO()
    Image.fromarray(pixels).save(data, fmt)
    return decode(data.getvalue(), "test")


@pytest.fixture(scope="module")
def model(tiny_model_f16: Path) -> Iterator[LlamaModel]:
    loaded = LlamaModel(LoadConfig(model_path=tiny_model_f16, n_ctx=512, n_parallel=1))
    yield loaded
    loaded.close()


@pytest.fixture(scope="module")
def projector(model: LlamaModel, tiny_projector: Path) -> Iterator[Projector]:
    loaded = Projector.load(tiny_projector, model, n_threads=2, use_gpu=False)
    yield loaded
    loaded.close()


def test_the_projector_loads_for_its_text_model(model: LlamaModel, projector: Projector) -> None:
    assert projector.sees_images
    assert projector.n_embd == model.n_embd == SPEC.text_n_embd
    assert not projector.uses_mrope


def test_an_image_adds_its_embeddings_to_the_prompt(
    model: LlamaModel, projector: Projector
) -> None:
    text = "user: look "
    plain = model.tokenize(text, add_special=True, parse_special=True)
    without = projector.tokenize(text, [])
    with without, projector.tokenize(text + IMAGE_MARKER, [picture(1)]) as with_image:
        assert without.parts == (TextRun(tuple(plain)),)
        assert without.n_tokens == len(plain)
        (image,) = with_image.images
        assert image.n_tokens == image.n_pos == SPEC.n_image_tokens
        text_runs = [part for part in with_image.parts if isinstance(part, TextRun)]
        assert with_image.n_tokens == sum(run.n_tokens for run in text_runs) + SPEC.n_image_tokens
        assert with_image.n_tokens >= without.n_tokens + SPEC.n_image_tokens
        first = with_image.parts[0]  # the text before the image tokenizes as it does alone
        assert isinstance(first, TextRun) and first.tokens[: len(plain)] == tuple(plain)


def test_the_same_picture_is_one_chunk_id_and_the_same_embeddings(
    projector: Projector,
) -> None:
    png, bmp = picture(1, "PNG"), picture(1, "BMP")  # one picture, sent in two encodings
    with projector.tokenize(f"{IMAGE_MARKER} and {IMAGE_MARKER}", [png, bmp]) as prompt:
        first, second = prompt.images
        assert first == second
        assert first.id == png.digest == bmp.digest
        a, b = projector.encode(first), projector.encode(second)
    assert a.values.dtype == np.float32
    assert a.values.shape == (SPEC.n_image_tokens, SPEC.text_n_embd)
    assert np.array_equal(a.values, b.values)
    assert a.chunk_id == png.digest and a.non_causal  # gemma3 reads an image bidirectionally


def test_different_pictures_give_different_embeddings(projector: Projector) -> None:
    with projector.tokenize(f"{IMAGE_MARKER}{IMAGE_MARKER}", [picture(1), picture(2)]) as prompt:
        first, second = prompt.images
        assert first != second
        a, b = projector.encode(first), projector.encode(second)
    assert np.abs(a.values - b.values).max() > 0.1


def test_placeholders_and_images_must_pair_up(projector: Projector) -> None:
    with pytest.raises(InvalidRequestError, match="2 image placeholder"):
        projector.tokenize(f"{IMAGE_MARKER} {IMAGE_MARKER}", [picture(1)])


def test_a_released_prompt_cannot_be_encoded(projector: Projector) -> None:
    prompt = projector.tokenize(IMAGE_MARKER, [picture(1)])
    prompt.close()
    prompt.close()  # twice is harmless
    with pytest.raises(EngineFailedError, match="released"):
        projector.encode(prompt.images[0])


def test_a_projector_for_another_model_is_a_clear_error(model: LlamaModel, tmp_path: Path) -> None:
    other = gguf_projector.write_projector(
        tmp_path / "mmproj-other.gguf", gguf_projector.ProjectorSpec(text_n_embd=128)
    )
    with pytest.raises(ModelLoadError, match=r"128-wide.*256-wide.*another model"):
        Projector.load(other, model, n_threads=2, use_gpu=False)


def test_a_text_model_is_not_a_projector(model: LlamaModel, tiny_model_f16: Path) -> None:
    with pytest.raises(ModelLoadError, match="llama model, not a vision projector"):
        Projector.load(tiny_model_f16, model, n_threads=2, use_gpu=False)


def test_a_closed_projector_refuses_work(model: LlamaModel, tiny_projector: Path) -> None:
    closing = Projector.load(tiny_projector, model, n_threads=2, use_gpu=False)
    closing.close()
    closing.close()
    with pytest.raises(EngineFailedError, match="unloaded"):
        closing.tokenize(IMAGE_MARKER, [picture(1)])


# --------------------------------------------------------------------------- decoding


def _decode_text(model: LlamaModel, tokens: tuple[int, ...], pos: int) -> int:
    batch = llama_cpp.llama_batch_init(len(tokens), 0, 1)
    try:
        for i, token in enumerate(tokens):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, pos + i, 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = i == len(tokens) - 1
        batch.n_tokens = len(tokens)
        assert llama_cpp.llama_decode(model.ctx, batch) == 0
    finally:
        llama_cpp.llama_batch_free(batch)
    return pos + len(tokens)


def _last_logits(model: LlamaModel, index: int) -> np.ndarray:
    row = llama_cpp.llama_get_logits_ith(model.ctx, index)
    return np.ctypeslib.as_array(row, shape=(model.n_vocab,)).copy()


def run_prompt(
    model: LlamaModel,
    projector: Projector,
    prompt: MediaPrompt,
    batch: EmbeddingBatch,
    causal: bool = False,
) -> np.ndarray:
    """Decode ``prompt`` into sequence 0 of a cleared context, as the scheduler will:
    text runs as token batches, each image as an embedding batch; the last logits."""
    llama_cpp.llama_memory_clear(model.memory, True)
    pos, last = 0, -1
    for part in prompt.parts:
        if isinstance(part, ImageChunk):
            encoded = projector.encode(part)
            if causal:
                encoded = ImageEmbeddings(encoded.chunk_id, encoded.values, non_causal=False)
            batch.decode(model.ctx, encoded, seq_id=0, pos=pos, logits_last=True)
            pos += part.n_pos
            last = batch.last_index(encoded)
        else:
            pos = _decode_text(model, part.tokens, pos)
            last = part.n_tokens - 1
    assert pos == prompt.n_pos
    return _last_logits(model, last)


def test_decoded_pictures_steer_the_next_token(model: LlamaModel, projector: Projector) -> None:
    batch = EmbeddingBatch(model.n_embd, capacity=model.config.n_ubatch)
    try:
        text = f"user: what is this? {IMAGE_MARKER}"
        greedy = []
        for seed in (1, 2, 1):
            with projector.tokenize(text, [picture(seed)]) as prompt:
                logits = run_prompt(model, projector, prompt, batch)
            assert np.isfinite(logits).all()
            greedy.append(int(logits.argmax()))
    finally:
        batch.free()
    assert greedy[0] != greedy[1]  # the picture decides what comes next
    assert greedy[0] == greedy[2]  # and the same picture decides the same


def test_a_bidirectional_image_must_fit_one_batch(model: LlamaModel, projector: Projector) -> None:
    small = EmbeddingBatch(model.n_embd, capacity=SPEC.n_image_tokens - 1)
    try:
        with projector.tokenize(IMAGE_MARKER, [picture(1)]) as prompt:
            encoded = projector.encode(prompt.images[0])
        with pytest.raises(EngineFailedError, match="larger batch size"):
            small.decode(model.ctx, encoded, seq_id=0, pos=0)
    finally:
        small.free()


@pytest.mark.usefixtures("cpu_backend_only")
def test_a_causal_image_decodes_in_pieces_as_in_one(
    model: LlamaModel, projector: Projector
) -> None:
    whole = EmbeddingBatch(model.n_embd, capacity=64)
    pieces = EmbeddingBatch(model.n_embd, capacity=4)  # 9 embeddings: 4 + 4 + 1
    try:
        with projector.tokenize(f"look: {IMAGE_MARKER}", [picture(3)]) as prompt:
            one = run_prompt(model, projector, prompt, whole, causal=True)
            split = run_prompt(model, projector, prompt, pieces, causal=True)
    finally:
        whole.free()
        pieces.free()
    np.testing.assert_allclose(split, one, rtol=1e-3, atol=1e-3)


# --------------------------------------------------------------------------- prefix matching


def _common(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def test_prompts_share_a_prefix_through_an_image_only_when_it_is_the_same_picture(
    projector: Projector,
) -> None:
    text = f"look: {IMAGE_MARKER} then"
    with (
        projector.tokenize(text + " one", [picture(1)]) as first,
        projector.tokenize(text + " two", [picture(1, "BMP")]) as again,
        projector.tokenize(text + " one", [picture(2)]) as other,
    ):
        ids, start = first.token_ids(), first.parts[0].n_tokens
        assert len(ids) == first.n_tokens
        image_ids = ids[start : start + SPEC.n_image_tokens]
        assert all(i < 0 for i in image_ids) and len(set(image_ids)) == SPEC.n_image_tokens
        assert all(i >= 0 for i in ids[:start] + ids[start + SPEC.n_image_tokens :])
        # the same picture: the shared prefix runs through the image into the text after it
        assert _common(ids, again.token_ids()) > start + SPEC.n_image_tokens
        # another picture: it ends where the image starts
        assert _common(ids, other.token_ids()) == start


def test_a_reused_prefix_never_ends_inside_an_image(projector: Projector) -> None:
    with projector.tokenize(f"look: {IMAGE_MARKER} then", [picture(1)]) as prompt:
        start = prompt.parts[0].n_tokens
        end = start + SPEC.n_image_tokens
        assert prompt.whole_prefix(0) == 0
        assert prompt.whole_prefix(start) == start  # up to the image: kept
        assert prompt.whole_prefix(start + 1) == start  # into the image: back to its start
        assert prompt.whole_prefix(end - 1) == start
        assert prompt.whole_prefix(end) == end  # the whole image: kept
        assert prompt.whole_prefix(end + 1) == end + 1
        assert prompt.whole_prefix(prompt.n_tokens + 5) == prompt.n_tokens


@pytest.mark.parametrize("keep", [0.001, 0.5, 0.99])
def test_a_cut_short_projector_is_a_clear_error(
    model: LlamaModel, tiny_projector: Path, tmp_path: Path, keep: float
) -> None:
    """Cut in its metadata, its tensor table or its tensor data, as an interrupted
    download leaves it: refused from the header, before libmtmd reads it."""
    data = tiny_projector.read_bytes()
    cut = tmp_path / "mmproj-cut.gguf"
    cut.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(ModelLoadError, match="damaged or cut short"):
        Projector.load(cut, model, n_threads=2, use_gpu=False)


def test_a_missing_projector_is_a_clear_error(model: LlamaModel, tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="not found"):
        Projector.load(tmp_path / "mmproj-gone.gguf", model, n_threads=2, use_gpu=False)


def test_text_stops_at_each_image_and_images_start_where_they_stand(
    projector: Projector,
) -> None:
    """What the scheduler walks by: a batch of text ends where the next image starts."""
    with projector.tokenize(f"a {IMAGE_MARKER} b {IMAGE_MARKER} c", [picture(1), picture(2)]) as p:
        first, second = p.images
        ids = p.token_ids()
        start1 = ids.index(first.stand_in_ids()[0])
        start2 = ids.index(second.stand_in_ids()[0])
        assert p.text_end(0) == start1
        assert p.image_at(start1) == first and p.image_at(0) is None
        assert p.image_at(start1 + 1) is None  # inside an image: no image starts there
        assert p.text_end(start1 + N_IMAGE) == start2
        assert p.image_at(start2) == second
        assert p.text_end(start2 + N_IMAGE) == p.n_tokens
        assert p.text_end(start1 + 3) == start1 + 3  # inside an image: no text to take
