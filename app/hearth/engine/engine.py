"""The engine facade the HTTP layer talks to: the loaded model, prompts, async generation."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from hearth.core.errors import (
    EngineFailedError,
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
from hearth.core.images import ImageInput
from hearth.core.model_info import LoadConfig, ModelInfo
from hearth.core.prompt_cache import OFF, PromptCacheSettings
from hearth.engine import fim_tokens
from hearth.engine.arrivals import Arrival, Arrivals
from hearth.engine.capabilities import ModelTraits
from hearth.engine.chat_template import ChatTemplate
from hearth.engine.embedder import Embedder, Embeddings
from hearth.engine.generation_stream import GenerationStream
from hearth.engine.media_prompt import MediaPrompt
from hearth.engine.model import LlamaModel
from hearth.engine.model_setup import set_up_model
from hearth.engine.projector import Projector
from hearth.engine.prompt_cache import PromptCache, PromptCacheStatus
from hearth.engine.reasoning import ReasoningSpec
from hearth.engine.request_checks import check_request, check_token_ids
from hearth.engine.scheduler import CompletedRequest, Scheduler, SchedulerStatus
from hearth.engine.slots import Job, common_prefix, make_async_sink
from hearth.engine.token_reuse import PromptTokenizer
from hearth.engine.tool_calls import ToolFormat
from hearth.engine.vision import close_model, tokenize_media

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

    def __init__(self, prompt_cache: PromptCacheSettings = OFF) -> None:
        self._prompt_cache = prompt_cache  # each load gets its own PromptCache from it
        self._disk: PromptCache | None = None  # of the loaded model
        self._lock = threading.Lock()
        self._load_lock = threading.Lock()
        self._model: LlamaModel | None = None
        self._projector: Projector | None = None  # of the loaded model; closed before it
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
        loaded = set_up_model(
            config, model_id_for(Path(config.model_path)), prompt_cache=self._prompt_cache,
            arrivals=self._arrivals, on_progress=on_progress, cancel=cancel,
        )  # fmt: skip
        with self._lock:
            self._model = loaded.model
            self._projector = loaded.projector
            self._template = loaded.template
            self._info = loaded.info
            self._traits = loaded.traits
            self._markers = loaded.markers
            self._preserved = {}
            self._prompts = loaded.prompts
            self._scheduler = loaded.scheduler
            self._disk = loaded.disk
        return loaded.info

    def unload(self, reason: str | None = None) -> None:
        """Free the model. Requests still running end with an error saying ``reason``
        (or as cancelled without one)."""
        with self._lock:
            scheduler, model, projector = self._scheduler, self._model, self._projector
            self._scheduler = self._model = self._template = self._info = None
            self._projector = None
            self._traits = None
            self._prompts = None
            self._disk = None
            self._markers = {}
            self._preserved = {}
        with self._embedder_lock:
            embedder, self._embedder = self._embedder, None
        if embedder is not None:
            embedder.close()
        if scheduler is not None:
            scheduler.stop(reason)
        if model is not None:
            close_model(model, projector)

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

    def prompt_cache_status(self) -> PromptCacheStatus | None:
        """The loaded model's prompt cache on disk, or None when it has none."""
        disk = self._disk
        if disk is None:
            return None
        store = disk.store
        return PromptCacheStatus(store.folder, store.size_bytes, store.budget, store.saving)

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

    def branch_prompt(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] = (),
        extra_context: Mapping[str, object] | None = None,
    ) -> str:
        """The prompt ``messages`` would make with another last message, for
        ``GenerationRequest.branch_prompt`` (``ChatTemplate.render_branch``); "" unless
        the loaded model's prompt cache saves where chats branch (a sliding-window
        model's: ``checkpoint_for``) and the prompt is text (one with images has none)."""
        disk, template = self._disk, self._template
        if disk is None or not disk.checkpoints or template is None:
            return ""
        if not messages or messages[-1].images:
            return ""
        return template.render_branch(messages, tools=tools, extra_context=extra_context)

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
        ``Arrivals.gather``)."""
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
        branch_at = 0  # where the chat's next request likely branches off (see Job)
        media: MediaPrompt | None = None  # a prompt with images
        if request.images:
            media = await self._tokenize_media(request, model)
            tokens = media.token_ids()
        elif request.prompt_tokens is not None:
            tokens = list(request.prompt_tokens)
            check_token_ids(tokens, model.n_vocab)
        else:
            text = request.prompt
            tokens, add_special, branch_at = await asyncio.to_thread(  # reusing earlier ids
                self._tokenize, text, request.add_bos, request.branch_prompt
            )
        try:
            await check_request(tokens, request, info, model)
            loop = asyncio.get_running_loop()
            queue: asyncio.Queue[GenerationEvent] = asyncio.Queue()
            job = Job(
                tokens=tokens,
                params=request.params,
                sink=make_async_sink(loop, queue),
                request_id=request.request_id,
                text=text,
                add_special=add_special,
                media=media,  # the job closes it when it ends
                branch_at=branch_at,
            )
            disk = self._disk  # prompt cache: a saved state is read before the job queues
            if disk is not None and media is None:
                job.saved = await asyncio.wrap_future(disk.prefetch(tokens))
            scheduler.submit(job)
        except BaseException:
            if media is not None:
                media.close()
            raise
        arrival = self._arriving.pop(request.request_id, None)
        if arrival is not None:
            self._arrivals.settle(arrival)
        return GenerationStream(scheduler, job, queue)

    def _tokenize(self, text: str, add_bos: bool, branch: str) -> tuple[list[int], bool, int]:
        """``text``'s tokens, whether BOS was added, and how many of them ``branch``'s
        tokens share (0 without one, or when the prompt cache has no use for it)."""
        prompts = self._prompt_tokenizer()
        tokens, add_special = prompts.for_generation(text, add_bos)
        disk = self._disk
        if not branch or disk is None or len(tokens) < disk.min_tokens:
            return tokens, add_special, 0
        other, _ = prompts.for_generation(branch, add_bos)
        return tokens, add_special, common_prefix(tokens, other)

    async def _tokenize_media(self, request: GenerationRequest, model: LlamaModel) -> MediaPrompt:
        """The prompt with its images as text runs and image chunks (``vision.py``)."""
        add = self._prompt_tokenizer().adds_bos(request.prompt, request.add_bos)
        return await asyncio.to_thread(tokenize_media, self._projector, model, request.prompt,
                                       request.images, add_special=add)  # fmt: skip

    async def count_tokens(self, text: str, images: Sequence[ImageInput] = ()) -> int:
        """The context entries ``text`` takes as a prompt, its images' embeddings too."""
        if not images:
            return len(await asyncio.to_thread(self.tokenize_prompt, text))
        request = GenerationRequest(prompt=text, images=tuple(images))
        with await self._tokenize_media(request, self._ready()[0]) as media:
            return media.n_tokens

    async def generate(self, request: GenerationRequest) -> AsyncIterator[GenerationEvent]:
        """Convenience: start and iterate; leaving the loop early cancels the request."""
        stream = await self.start(request)
        try:
            async for event in stream:
                yield event
        finally:
            stream.cancel()

