"""The engine facade the HTTP layer talks to: the loaded model, prompts, async generation."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from hearth.core.errors import (
    ContextOverflowError,
    EngineFailedError,
    HearthError,
    InvalidRequestError,
    ModelLoadError,
    ModelNotLoadedError,
)
from hearth.core.fim import FimLayout
from hearth.core.generation import (
    ChatMessage,
    GenerationEvent,
    GenerationRequest,
    ToolSpec,
)
from hearth.core.model_info import LoadConfig, ModelInfo
from hearth.engine import fim_tokens
from hearth.engine.arrivals import Arrival, Arrivals
from hearth.engine.capabilities import ModelTraits, model_traits
from hearth.engine.chat_template import ChatTemplate
from hearth.engine.embedder import Embedder, Embeddings
from hearth.engine.generation_stream import GenerationStream
from hearth.engine.model import LlamaModel
from hearth.engine.reasoning import ReasoningSpec
from hearth.engine.scheduler import CompletedRequest, Scheduler, SchedulerStatus
from hearth.engine.slots import Job, make_async_sink
from hearth.engine.speculative import Speculator
from hearth.engine.token_reuse import PromptTokenizer
from hearth.engine.tool_calls import ToolFormat

log = logging.getLogger(__name__)


def model_id_for(path: Path) -> str:
    """The name clients use for a model: its file name without ``.gguf``."""
    name = path.name
    return name[: -len(".gguf")] if name.lower().endswith(".gguf") else name


def _no_progress(_fraction: float) -> None:
    return None


class Engine:
    """One model at a time; generation requests go through the scheduler.

    The engine holds the loaded model but not the lifecycle around it: which model to
    load, when, and what clients see meanwhile belong to the server's model manager.
    ``load`` still guards itself, because two overlapping loads used to leave a whole
    model (about 500 MB and its threads) behind.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._load_lock = threading.Lock()
        self._model: LlamaModel | None = None
        self._scheduler: Scheduler | None = None
        self._template: ChatTemplate | None = None
        self._info: ModelInfo | None = None
        self._traits: ModelTraits | None = None
        self._markers: dict[int, str] = {}  # marker token id -> text, of the loaded model
        self._preserved: dict[tuple[str, ...], frozenset[int]] = {}  # by marker texts
        self._prompts: PromptTokenizer | None = None  # of the loaded model
        self._embedder: Embedder | None = None
        self._embedder_lock = threading.Lock()
        self._arrivals = Arrivals()
        self._arriving: dict[str, Arrival] = {}  # by request id; used on the event loop

    # ------------------------------------------------------------------ loading
    def load(
        self,
        config: LoadConfig,
        *,
        on_progress: Callable[[float], None] = _no_progress,
        cancel: threading.Event | None = None,
    ) -> ModelInfo:
        """Blocking load (run it in a thread); replaces any model already loaded.

        A second load while one runs is refused, never interleaved. On failure nothing
        is loaded and nothing is leaked: the half-built model is closed here.
        """
        if not self._load_lock.acquire(blocking=False):
            raise ModelLoadError("Another model is loading; wait for it or cancel it.")
        try:
            self.unload("The model was unloaded to load another one.")
            return self._load_unlocked(config, on_progress, cancel or threading.Event())
        finally:
            self._load_lock.release()

    def _load_unlocked(
        self, config: LoadConfig, on_progress: Callable[[float], None], cancel: threading.Event
    ) -> ModelInfo:
        model_id = model_id_for(Path(config.model_path))
        try:
            model = LlamaModel(config, on_progress=on_progress, cancel=cancel)
        except HearthError:
            raise
        except Exception as exc:  # llama.cpp or ctypes failures must not kill the worker
            log.exception("model load failed")
            raise ModelLoadError(str(exc)) from exc
        try:
            template = ChatTemplate.from_metadata(
                model.metadata,
                bos_token=model.token_text(model.bos),
                eos_token=model.token_text(model.eos),
                name=model_id,
            )
            markers = model.marker_tokens()
            traits = model_traits(
                None if template.is_fallback else template.source,
                set(markers.values()),
                model.metadata,
                fim=model.fim_tokens() is not None,
                chat_format=config.chat_format,
            )
            info = model.info(model_id)
            speculator = Speculator.for_load(model, config)  # loads the draft model, if any
            prompts = PromptTokenizer(model, template.bos_token, markers)
            scheduler = Scheduler(model, max_queue=config.max_queue, arrivals=self._arrivals,
                                  speculator=speculator, memo=prompts.memo)  # fmt: skip
        except InvalidRequestError as exc:  # e.g. a chat template that doesn't compile
            model.close()
            raise InvalidRequestError(f"Cannot load '{model_id}': {exc.message}") from exc
        except HearthError as exc:
            model.close()
            raise ModelLoadError(f"Cannot load '{model_id}': {exc.message}") from exc
        except Exception as exc:
            model.close()
            log.exception("model set-up failed")
            raise ModelLoadError(f"Cannot load '{model_id}': {exc}") from exc
        with self._lock:
            self._model = model
            self._template = template
            self._info = info
            self._traits = traits
            self._markers = markers
            self._preserved = {}
            self._prompts = prompts
            self._scheduler = scheduler
        return info

    def unload(self, reason: str | None = None) -> None:
        """Free the model. Requests still running end with an error saying ``reason``
        (or as cancelled without one)."""
        with self._lock:
            scheduler, model = self._scheduler, self._model
            self._scheduler = self._model = self._template = self._info = None
            self._traits = None
            self._prompts = None
            self._markers = {}
            self._preserved = {}
        with self._embedder_lock:
            embedder, self._embedder = self._embedder, None
        if embedder is not None:
            embedder.close()
        if scheduler is not None:
            scheduler.stop(reason)
        if model is not None:
            model.close()

    # ------------------------------------------------------------------ queries
    @property
    def info(self) -> ModelInfo | None:
        return self._info

    def completed_requests(self, limit: int = 50) -> list[CompletedRequest]:
        scheduler = self._scheduler
        return scheduler.completed(limit) if scheduler is not None else []

    def status(self) -> SchedulerStatus | None:
        scheduler = self._scheduler
        return scheduler.status() if scheduler is not None else None

    def _ready(self) -> tuple[LlamaModel, Scheduler, ChatTemplate, ModelInfo]:
        with self._lock:
            model, scheduler = self._model, self._scheduler
            template, info = self._template, self._info
        if model is None or scheduler is None or template is None or info is None:
            raise ModelNotLoadedError("No model is loaded. Load a model first.")
        return model, scheduler, template, info

    # ------------------------------------------------------------------ prompts
    def render_chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] = (),
        extra_context: Mapping[str, object] | None = None,
    ) -> str:
        """The prompt for ``messages``; ``extra_context`` is the client's
        ``chat_template_kwargs`` (``enable_thinking``, ``reasoning_effort`` ...)."""
        _, _, template, _ = self._ready()
        if not messages:
            raise InvalidRequestError("messages must not be empty.", param="messages")
        return template.render(messages, tools=tools, extra_context=extra_context)

    @property
    def traits(self) -> ModelTraits:
        """The loaded model's family formats and capabilities."""
        self._ready()
        traits = self._traits
        if traits is None:
            raise ModelNotLoadedError("No model is loaded. Load a model first.")
        return traits

    @property
    def loaded_traits(self) -> ModelTraits | None:
        """The traits of the model loaded now, or None (for listings, which never wait)."""
        return self._traits

    @property
    def tool_format(self) -> ToolFormat:
        return self.traits.tool_format

    @property
    def reasoning(self) -> ReasoningSpec | None:
        """The reasoning markers of the loaded model, or None when it doesn't reason."""
        return self.traits.reasoning

    def preserved_token_ids(self, texts: Iterable[str]) -> frozenset[int]:
        """The ids of the loaded model's marker tokens found in ``texts`` (e.g. the
        ``<|channel|>`` of ``<|channel|>analysis``): the control tokens a reply must keep
        as text so its tool calls and reasoning parse, as llama-server's
        ``preserved_tokens`` does. Markers that are ordinary text need nothing."""
        self._ready()
        wanted = tuple(t for t in texts if t)
        known = self._preserved.get(wanted)
        if known is None:  # a scan of every marker token (thousands in some vocabularies)
            known = frozenset(
                token
                for token, text in self._markers.items()
                if len(text) > 1 and any(text in w for w in wanted)
            )
            self._preserved[wanted] = known
        return known

    def tokenize_prompt(self, text: str, *, add_bos: bool = True) -> list[int]:
        return self._prompt_tokenizer().tokenize(text, add_bos)

    def _prompt_tokenizer(self) -> PromptTokenizer:
        self._ready()
        prompts = self._prompts
        if prompts is None:
            raise ModelNotLoadedError("No model is loaded. Load a model first.")
        return prompts

    def fim_token_texts(self) -> tuple[str, str, str] | None:
        """The FIM prefix/suffix/middle tokens as text, for clients that render FIM."""
        return fim_tokens.fim_token_texts(self._ready()[0])

    def fim_layout(self) -> FimLayout | None:
        """The loaded model's FIM tokens for laying out an infill prompt; None when the
        model was not trained for fill-in-the-middle."""
        return fim_tokens.fim_layout(self._ready()[0])

    def tokenize_text(self, text: str) -> list[int]:
        """Plain text as tokens: no BOS, and special-token text in it stays text (code
        may well contain ``<|fim_middle|>``)."""
        model, _, _, _ = self._ready()
        return model.tokenize(text, add_special=False, parse_special=False)

    def fim_prompt(self, prefix: str, suffix: str) -> list[int]:
        return fim_tokens.fim_prompt(self._ready()[0], prefix, suffix)

    # ------------------------------------------------------------------ embeddings
    async def embed(self, texts: list[str]) -> Embeddings:
        model, _, _, info = self._ready()

        def run() -> Embeddings:
            with self._embedder_lock:
                if self._model is not model:  # unloaded meanwhile: its memory is gone
                    raise EngineFailedError("The model was unloaded; retry the request.")
                if self._embedder is None:
                    self._embedder = Embedder(model, n_ctx=min(info.n_ctx_per_slot, 8192))
                embedder = self._embedder
            return embedder.embed(texts)

        return await asyncio.to_thread(run)

    # ------------------------------------------------------------------ generation
    @contextmanager
    def incoming(self, request_id: str) -> Iterator[None]:
        """Wrap a request handler that may generate: from its arrival until ``start``
        queues the request with this id, the scheduler knows it is coming and lets
        simultaneous requests begin in the same decode step (see
        ``Scheduler._gather_arrivals``)."""
        with self._arrivals.expect() as arrival:
            self._arriving[request_id] = arrival
            try:
                yield
            finally:
                self._arriving.pop(request_id, None)

    def not_coming(self, request_id: str) -> None:
        """A request with this id goes elsewhere (a remote engine): no longer arriving."""
        arrival = self._arriving.pop(request_id, None)
        if arrival is not None:
            self._arrivals.settle(arrival)

    @property
    def arriving(self) -> int:
        """Requests counted as on their way to the scheduler (see ``incoming``)."""
        return self._arrivals.pending

    async def start(self, request: GenerationRequest) -> GenerationStream:
        """Validate and queue a request; errors surface here, before any streaming."""
        model, scheduler, _, info = self._ready()
        text, add_special = None, False  # the text the tokens stand for, if any
        if request.prompt_tokens is not None:
            tokens = list(request.prompt_tokens)
            bad_tokens = [t for t in tokens if not 0 <= t < model.n_vocab]
            if bad_tokens:
                raise InvalidRequestError(
                    f"The prompt names token {bad_tokens[0]}, outside the vocabulary of "
                    f"{model.n_vocab} tokens.",
                    param="prompt",
                )
        else:
            text = request.prompt
            tokens, add_special = await asyncio.to_thread(  # reusing an earlier turn's ids
                self._prompt_tokenizer().for_generation, text, request.add_bos
            )
        self._check_fits(tokens, request, info)
        if request.params.grammar:
            await asyncio.to_thread(model.check_grammar, request.params.grammar)
        bad = [t for t in request.params.logit_bias if not 0 <= t < model.n_vocab]
        if bad:
            raise InvalidRequestError(
                f"logit_bias names token {bad[0]}, outside the vocabulary of "
                f"{model.n_vocab} tokens.",
                param="logit_bias",
            )
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[GenerationEvent] = asyncio.Queue()
        job = Job(
            tokens=tokens,
            params=request.params,
            sink=make_async_sink(loop, queue),
            request_id=request.request_id,
            text=text,
            add_special=add_special,
        )
        scheduler.submit(job)
        arrival = self._arriving.pop(request.request_id, None)
        if arrival is not None:
            self._arrivals.settle(arrival)
        return GenerationStream(scheduler, job, queue)

    async def generate(self, request: GenerationRequest) -> AsyncIterator[GenerationEvent]:
        """Convenience: start and iterate; leaving the loop early cancels the request."""
        stream = await self.start(request)
        try:
            async for event in stream:
                yield event
        finally:
            stream.cancel()

    @staticmethod
    def _check_fits(tokens: list[int], request: GenerationRequest, info: ModelInfo) -> None:
        if not tokens:
            raise InvalidRequestError("The prompt is empty.", param="prompt")
        n_ctx = info.n_ctx_per_slot
        max_tokens = request.params.max_tokens or 0
        if len(tokens) >= n_ctx or len(tokens) + max_tokens > n_ctx:
            raise ContextOverflowError(len(tokens), max_tokens, n_ctx)
