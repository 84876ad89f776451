"""One model load: the llama.cpp model and everything built around it for serving.

Kept apart from the engine facade because a load is one transaction: the model, its
projector, chat template, traits, prompt tokenizer, prompt cache and scheduler are all
built, or none is. A failure after the model exists closes it (and its projector) here,
so nothing half-built (about 500 MB and its threads) outlives a failed load, and every
failure reaches the caller as one ``HearthError`` naming the model.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from hearth.core.errors import HearthError, InvalidRequestError, ModelLoadError
from hearth.core.model_info import LoadConfig, ModelInfo
from hearth.core.prompt_cache import PromptCacheSettings
from hearth.engine.arrivals import Arrivals
from hearth.engine.capabilities import ModelTraits, model_traits
from hearth.engine.chat_template import ChatTemplate
from hearth.engine.fallback_templates import fallback_template
from hearth.engine.model import LlamaModel
from hearth.engine.projector import Projector
from hearth.engine.prompt_cache import PromptCache
from hearth.engine.scheduler import Scheduler
from hearth.engine.speculative import Speculator
from hearth.engine.token_reuse import PromptTokenizer
from hearth.engine.vision import close_model, load_projector

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadedModel:
    """What one load built; the engine owns it from then on (``close_model`` and
    ``Scheduler.stop`` free it)."""

    model: LlamaModel
    projector: Projector | None  # closed before the model: it borrows it
    template: ChatTemplate
    info: ModelInfo
    traits: ModelTraits
    markers: dict[int, str]  # marker token id -> text
    prompts: PromptTokenizer
    disk: PromptCache | None  # the prompt cache on disk, when the settings turn it on
    scheduler: Scheduler


def set_up_model(
    config: LoadConfig,
    model_id: str,
    *,
    prompt_cache: PromptCacheSettings,
    arrivals: Arrivals,
    on_progress: Callable[[float], None],
    cancel: threading.Event,
) -> LoadedModel:
    """Load ``config``'s model as ``model_id`` and build its serving parts (blocking).

    Raises ``ModelLoadError``, or ``InvalidRequestError`` for a chat template that
    doesn't compile; llama.cpp's and ctypes' own exceptions are turned into the former
    so they never kill the worker.
    """
    try:
        model = LlamaModel(config, on_progress=on_progress, cancel=cancel)
    except HearthError:
        raise
    except Exception as exc:  # llama.cpp or ctypes failures must not kill the worker
        log.exception("model load failed")
        raise ModelLoadError(str(exc)) from exc
    projector: Projector | None = None
    try:
        projector = load_projector(config, model)
        markers = model.marker_tokens()
        template = ChatTemplate.from_metadata(
            model.metadata,
            bos_token=model.token_text(model.bos),
            eos_token=model.token_text(model.eos),
            name=model_id,
            fallback=fallback_template(markers.values()),
        )
        traits = model_traits(
            None if template.is_fallback else template.source,
            set(markers.values()),
            model.metadata,
            fim=model.fim_tokens() is not None,
            chat_format=config.chat_format,
        )
        info = dataclasses.replace(model.info(model_id), vision=projector is not None)
        speculator = Speculator.for_load(model, config)  # loads the draft model, if any
        prompts = PromptTokenizer(model, template.bos_token, markers)
        disk = PromptCache.for_model(model, prompt_cache)
        scheduler = Scheduler(model, max_queue=config.max_queue, arrivals=arrivals,
                              speculator=speculator, memo=prompts.memo,
                              disk=disk, projector=projector)  # fmt: skip
    except InvalidRequestError as exc:  # e.g. a chat template that doesn't compile
        close_model(model, projector)
        raise InvalidRequestError(f"Cannot load '{model_id}': {exc.message}") from exc
    except HearthError as exc:
        close_model(model, projector)
        raise ModelLoadError(f"Cannot load '{model_id}': {exc.message}") from exc
    except Exception as exc:
        close_model(model, projector)
        log.exception("model set-up failed")
        raise ModelLoadError(f"Cannot load '{model_id}': {exc}") from exc
    return LoadedModel(model, projector, template, info, traits, markers, prompts, disk,
                       scheduler)  # fmt: skip
