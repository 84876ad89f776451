"""Pictures, greedy requests and loaded engines for the in-process vision tests
(tests/integration/test_vision_engine.py with the gemma3 pair, test_vision_mrope.py with
the M-RoPE pairs), so both ask the same way and their checks mean the same."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image

from hearth.core.generation import GenerationRequest
from hearth.core.images import ImageInput
from hearth.core.model_info import LoadConfig
from hearth.core.sampling import SamplingParams
from hearth.engine.engine import Engine
from hearth.server.image_input import decode

NO_EOG = {2: -100.0, 260: -100.0}  # the tiny vocabulary's end tokens: replies run full length
ASK = "user: what is in this picture? "


def noise_png(seed: int, size: tuple[int, int] = (80, 120)) -> bytes:
    """A seeded noise picture, ``size`` = (height, width), as PNG bytes."""
    pixels = np.random.default_rng(seed).integers(0, 256, (*size, 3), dtype=np.uint8)
    data = io.BytesIO()
    Image.fromarray(pixels).save(data, "PNG")
    return data.getvalue()


def picture(seed: int, size: tuple[int, int] = (80, 120)) -> ImageInput:
    """:func:`noise_png` decoded as the server decodes an upload."""
    return decode(noise_png(seed, size), "test")


def greedy(prompt: str, *images: ImageInput, max_tokens: int = 8) -> GenerationRequest:
    """A greedy request that never ends early, so replies compare token for token."""
    params = SamplingParams(temperature=0, max_tokens=max_tokens, logit_bias=NO_EOG)
    return GenerationRequest(prompt=prompt, images=images, params=params)


def load_vision(model: Path, projector: Path | None, **overrides: object) -> Engine:
    """An engine with ``model`` and ``projector`` loaded: 4 slots of a 2048 context on
    2 threads unless ``overrides`` say otherwise."""
    engine = Engine()
    config: dict[str, object] = dict(n_ctx=2048, n_parallel=4, n_threads=2)
    config.update(overrides)
    engine.load(LoadConfig(model_path=model, mmproj_path=projector, **config))  # type: ignore[arg-type]
    return engine
