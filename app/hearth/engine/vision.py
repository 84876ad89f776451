"""A loaded model's eyes: its projector, and the prompts with images it tokenizes.

``Engine.load`` loads the projector (``LoadConfig.mmproj_path``) after the text model
and before the scheduler starts, and refuses the kinds this scheduler cannot run, so
a load either sees images properly or fails with a message that says why. M-RoPE
projectors (Qwen2-VL, Qwen2.5-VL, Qwen3-VL) are served: their images take a grid of
positions (``image_batch.py``), fewer than their embeddings (``Slot.pos_shift``). A request
with images is tokenized here into a ``MediaPrompt`` whose ``token_ids`` stand for
the context entries (the scheduler's prefix cache compares them); its images are
encoded and decoded by the scheduler (``image_jobs.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from hearth.core.errors import ImagesNotSupportedError, InvalidRequestError, ModelLoadError
from hearth.core.images import ImageInput
from hearth.core.model_info import LoadConfig
from hearth.engine.backend import resolve_threads
from hearth.engine.media_prompt import MediaPrompt
from hearth.engine.model import LlamaModel
from hearth.engine.projector import Projector

log = logging.getLogger(__name__)


def load_projector(config: LoadConfig, model: LlamaModel) -> Projector | None:
    """The projector ``config`` names, loaded for ``model``; None without one. Raises
    ``ModelLoadError`` for a file that cannot serve this model, or a kind of projector
    the batched scheduler cannot place."""
    if config.mmproj_path is None:
        return None
    path = Path(config.mmproj_path)
    if not path.is_file():
        raise ModelLoadError(f"The vision projector {path} was not found.")
    projector = Projector.load(
        path,
        model,
        n_threads=resolve_threads(config.n_threads_batch or config.n_threads),
        use_gpu=config.n_gpu_layers != 0,
    )
    return projector


def close_model(model: LlamaModel, projector: Projector | None) -> None:
    """Free a model and its projector, the projector first: it borrows the model."""
    if projector is not None:
        projector.close()
    model.close()


def tokenize_media(
    projector: Projector | None,
    model: LlamaModel,
    text: str,
    images: Sequence[ImageInput],
    *,
    add_special: bool,
) -> MediaPrompt:
    """``text`` with its ``IMAGE_MARKER``s as a prompt of text runs and image chunks.
    Images for a model loaded without a projector, and an image the model must read in
    one decode but that is larger than the context's micro-batch, are a clear 400
    here, before the request takes a slot."""
    if projector is None:
        name = Path(model.config.model_path).name.removesuffix(".gguf")
        raise ImagesNotSupportedError(name, len(images))
    n_ubatch = min(model.config.n_ubatch, model.config.n_batch)
    prompt = projector.tokenize(text, images, add_special=add_special)
    for image in prompt.images:
        if image.non_causal and image.n_tokens > n_ubatch:
            prompt.close()
            raise InvalidRequestError(
                f"An image here takes {image.n_tokens} tokens, which this model reads in "
                f"one batch, but the model was loaded with a batch of {n_ubatch}. Reload "
                f"it with --ubatch (and --batch) of at least {image.n_tokens}.",
                param="messages",
            )
        if image.n_pos != image.n_tokens and not projector.uses_mrope:
            prompt.close()  # positions of another layout than M-RoPE's grid
            raise InvalidRequestError(
                "This model places image embeddings in a way Hearth's scheduler does not "
                "support yet.",
                param="messages",
            )
    return prompt
