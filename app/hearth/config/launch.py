"""How to start the worker: this same program again, with one typed set of settings.

Packaged apps (Briefcase) have no Python interpreter and no ``-m``: ``sys.executable``
is the app's own stub, which runs Hearth's ``__main__`` with the arguments it is given.

``LaunchSettings`` is the only definition of the worker's launch settings: the
supervisor turns it into argv (``to_argv``), ``hearth serve`` / ``hearth --worker``
parse argv back with the argparse definition beside it (``add_launch_arguments``,
``LaunchSettings.from_args``). A flag added here is added for both sides at once.
Secrets never travel in argv from the GUI: its token goes in ``WORKER_TOKEN_ENV``.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from hearth.config.paths import default_paths
from hearth.core.model_info import (
    CHAT_FORMATS,
    DEFAULT_SPEC,
    FlashAttention,
    LoadConfig,
    SpecMode,
    SplitMode,
)
from hearth.core.prompt_cache import DEFAULT_MIN_TOKENS, GIB, PromptCacheSettings
from hearth.core.residency import ResidencySettings

PACKAGED_ENV = "HEARTH_PACKAGED"
WORKER_TOKEN_ENV = "HEARTH_WORKER_TOKEN"  # the per-launch token the supervisor gives
API_KEY_ENV = "HEARTH_API_KEY"  # a user key for `hearth serve` (and for CLI clients)
DEFAULT_PORT = 8677
LOOPBACK_HOST = "127.0.0.1"
LAN_HOST = "0.0.0.0"  # binding every interface is what "LAN" means
NO_MODEL = Path()  # LoadConfig.model_path when no model is loaded at start


def is_packaged() -> bool:
    """True when ``sys.executable`` is not a Python interpreter but the app itself."""
    if getattr(sys, "frozen", False) or os.environ.get(PACKAGED_ENV) == "1":
        return True
    return not Path(sys.executable).name.lower().startswith(("python", "pypy"))


def relaunch_prefix() -> list[str]:
    """The command prefix that re-runs Hearth: ``[app]`` or ``[python, -m, hearth]``."""
    if is_packaged():
        return [sys.executable]
    return [sys.executable, "-m", "hearth"]


def _no_model_load() -> LoadConfig:
    return LoadConfig(model_path=NO_MODEL)


def default_prompt_cache() -> PromptCacheSettings:
    """On, in the data folder's ``prompt-cache``, with the default budget."""
    return PromptCacheSettings(folder=default_paths().prompt_cache_dir)


@dataclass(frozen=True)
class LaunchSettings:
    """Everything the worker is started with, except secrets.

    ``endpoint_open`` False ("private"): only the holder of the per-launch token may
    use the worker (the GUI with its endpoint off). ``require_key``: None means "if any
    key exists" (``hearth serve``'s default), True/False is the user's explicit choice
    (the GUI's checkbox); off loopback a key is always required.
    """

    load: LoadConfig = field(default_factory=_no_model_load)
    host: str = LOOPBACK_HOST
    port: int = DEFAULT_PORT
    endpoint_open: bool = True
    require_key: bool | None = None
    stored_keys: bool = True  # accept the keys made with 'hearth keys create'
    api_keys: tuple[str, ...] = ()  # --api-key; the supervisor never sets these
    cors_origins: tuple[str, ...] = ()
    jit: bool = True
    ttl_s: float | None = None
    parent_pid: int | None = None
    prompt_cache: PromptCacheSettings = field(default_factory=default_prompt_cache)
    residency: ResidencySettings = field(default_factory=ResidencySettings)

    @property
    def has_model(self) -> bool:
        return self.load.model_path != NO_MODEL

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> LaunchSettings:
        """Settings from a namespace parsed by a parser given ``add_launch_arguments``."""
        load = LoadConfig(
            model_path=args.model.expanduser() if args.model else NO_MODEL,
            n_ctx=args.ctx,
            n_parallel=args.parallel,
            n_gpu_layers=args.n_gpu_layers,
            main_gpu=args.main_gpu,
            split_mode=SplitMode(args.split_mode),
            tensor_split=tuple(args.tensor_split),
            kv_unified=args.kv_unified,
            n_threads=args.threads,
            n_threads_batch=args.threads_batch,
            n_batch=args.batch,
            n_ubatch=args.ubatch,
            flash_attention=FlashAttention(args.flash_attn),
            cache_type_k=args.cache_type_k,
            cache_type_v=args.cache_type_v,
            use_mmap=not args.no_mmap,
            use_mlock=args.mlock,
            max_queue=args.max_queue,
            draft_model_path=args.draft_model.expanduser() if args.draft_model else None,
            spec_mode=SpecMode(args.spec) if args.spec else None,
            draft_max=args.draft_max,
            draft_min=args.draft_min,
            chat_format=args.chat_format,
            mmproj_path=args.mmproj.expanduser() if args.mmproj else None,
        )
        return cls(
            load=load,
            host=args.host,
            port=args.port,
            endpoint_open=not args.private,
            require_key=args.require_key,
            stored_keys=not args.no_stored_keys,
            api_keys=tuple(k for k in args.api_key if k),
            cors_origins=tuple(args.cors_origin),
            jit=not args.no_jit,
            ttl_s=args.ttl if args.ttl and args.ttl > 0 else None,
            parent_pid=args.parent_pid,
            prompt_cache=_prompt_cache_from(args),
            residency=_residency_from(args),
        )

    def to_argv(self) -> list[str]:
        """The worker's argv for these settings; ``from_args`` reads back equal settings.

        Host and port are always written (``hearth --worker`` defaults to port 0);
        everything else only where it differs from the default.
        """
        load, base = self.load, _no_model_load()
        argv = ["--host", self.host, "--port", str(self.port)]
        if self.has_model:
            argv += ["--model", str(load.model_path)]
        for flag, value, default in (
            ("--ctx", load.n_ctx, base.n_ctx),
            ("--parallel", load.n_parallel, base.n_parallel),
            ("--n-gpu-layers", load.n_gpu_layers, base.n_gpu_layers),
            ("--main-gpu", load.main_gpu, base.main_gpu),
            ("--split-mode", load.split_mode.value, base.split_mode.value),
            ("--threads", load.n_threads, base.n_threads),
            ("--threads-batch", load.n_threads_batch, base.n_threads_batch),
            ("--batch", load.n_batch, base.n_batch),
            ("--ubatch", load.n_ubatch, base.n_ubatch),
            ("--cache-type-k", load.cache_type_k, base.cache_type_k),
            ("--cache-type-v", load.cache_type_v, base.cache_type_v),
            ("--flash-attn", load.flash_attention.value, base.flash_attention.value),
            ("--max-queue", load.max_queue, base.max_queue),
            ("--draft-model", load.draft_model_path, None),
            ("--spec", load.spec_mode.value if load.spec_mode else None, None),
            ("--draft-max", load.draft_max, base.draft_max),
            ("--draft-min", load.draft_min, base.draft_min),
            ("--chat-format", load.chat_format, None),
            ("--mmproj", load.mmproj_path, None),
            ("--ttl", self.ttl_s, None),
            ("--parent-pid", self.parent_pid, None),
        ):
            if value != default:
                argv += [flag, str(value)]
        if load.tensor_split:
            argv += ["--tensor-split", ",".join(repr(v) for v in load.tensor_split)]
        for flag, on in (
            ("--kv-unified", load.kv_unified),
            ("--no-mmap", not load.use_mmap),
            ("--mlock", load.use_mlock),
            ("--private", not self.endpoint_open),
            ("--require-key", self.require_key is True),
            ("--no-require-key", self.require_key is False),
            ("--no-stored-keys", not self.stored_keys),
            ("--no-jit", not self.jit),
        ):
            if on:
                argv.append(flag)
        argv += self._prompt_cache_argv()
        argv += self._residency_argv()
        for key in self.api_keys:
            argv += ["--api-key", key]
        for origin in self.cors_origins:
            argv += ["--cors-origin", origin]
        return argv

    def _prompt_cache_argv(self) -> list[str]:
        cache, base = self.prompt_cache, default_prompt_cache()
        argv = []
        if cache.folder != base.folder:
            argv += ["--prompt-cache", "off" if cache.folder is None else str(cache.folder)]
        if cache.max_bytes is not None:
            argv += ["--prompt-cache-max", repr(cache.max_bytes / GIB)]
        if cache.min_tokens != base.min_tokens:
            argv += ["--prompt-cache-min-tokens", str(cache.min_tokens)]
        return argv


    def _residency_argv(self) -> list[str]:
        given, base = self.residency, ResidencySettings()
        argv = []
        if given.max_models != base.max_models:
            argv += ["--max-models", str(given.max_models)]
        if given.memory_budget_bytes is not None:
            argv += ["--memory-budget", repr(given.memory_budget_bytes / GIB)]
        if given.jit_ttl_s != base.jit_ttl_s:
            argv += ["--jit-ttl", repr(given.jit_ttl_s or 0.0)]
        if given.load_queue_timeout_s != base.load_queue_timeout_s:
            argv += ["--load-queue-timeout", repr(given.load_queue_timeout_s)]
        return argv


def _residency_from(args: argparse.Namespace) -> ResidencySettings:
    return ResidencySettings(
        max_models=args.max_models,
        memory_budget_bytes=None if args.memory_budget is None else round(args.memory_budget * GIB),
        jit_ttl_s=args.jit_ttl if args.jit_ttl > 0 else None,
        load_queue_timeout_s=args.load_queue_timeout,
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds like 60; got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError("must be 0 seconds or more")
    return value


def _prompt_cache_from(args: argparse.Namespace) -> PromptCacheSettings:
    base = default_prompt_cache()
    where: str | None = args.prompt_cache
    folder = base.folder if where is None else None if where == "off" else Path(where)
    return PromptCacheSettings(
        folder=folder.expanduser() if folder is not None else None,
        max_bytes=None if args.prompt_cache_max is None else round(args.prompt_cache_max * GIB),
        min_tokens=args.prompt_cache_min_tokens,
    )


def _gib(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        message = f"expected a size in GiB like 5 or 0.5; got {text!r}"
        raise argparse.ArgumentTypeError(message) from None
    if not value >= 0:
        raise argparse.ArgumentTypeError("the size must be 0 GiB or more")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number; got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _split_list(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 3,1; got {text!r}") from None
    if any(v < 0 for v in values) or not any(values):
        raise argparse.ArgumentTypeError("tensor split values must be >= 0, not all 0")
    return values


def add_launch_arguments(parser: argparse.ArgumentParser) -> None:
    """The worker's flags, shared by ``hearth serve`` and ``hearth --worker``."""
    base = _no_model_load()
    add = parser.add_argument
    add("--model", "-m", type=Path, default=None,
        help="GGUF file, or a library model's name, to load at start (else the first "
        "request loads one)")
    add("--no-jit", action="store_true", help="never load library models named by requests")
    add("--ttl", type=float, default=None, help="unload the model after this many idle seconds")
    add("--host", default=LOOPBACK_HOST,
        help=f"address to bind (default {LOOPBACK_HOST}; others need an API key)")
    add("--port", type=int, default=DEFAULT_PORT,
        help=f"port (default {DEFAULT_PORT}; 0 picks a free one)")
    add("--ctx", type=int, default=base.n_ctx,
        help="context tokens per slot (default: 4096, or the model's trained context if smaller)")
    add("--parallel", "-np", type=int, default=base.n_parallel,
        help=f"slots: requests decoded at once (default {base.n_parallel})")
    add("--n-gpu-layers", "-ngl", type=int, default=base.n_gpu_layers,
        help="layers to offload to the GPU (-1 all, 0 none)")
    add("--main-gpu", "-mg", type=int, default=base.main_gpu,
        help="GPU for the whole model when --split-mode none")
    add("--split-mode", "-sm", choices=[m.value for m in SplitMode],
        default=base.split_mode.value, help="how to split the model across GPUs")
    add("--tensor-split", "-ts", type=_split_list, default=(),
        help="share of the model per GPU, e.g. 3,1")
    add("--kv-unified", action="store_true", help="one KV buffer shared by all slots")
    add("--threads", "-t", type=int, default=base.n_threads,
        help="decode threads (0 = physical cores)")
    add("--threads-batch", type=int, default=base.n_threads_batch,
        help="prompt threads (0 = same as --threads)")
    add("--batch", type=int, default=base.n_batch,
        help="n_batch: most prompt tokens per decode step while no stream is decoding "
        "(while streams decode, a step takes at most --ubatch)")
    add("--ubatch", type=int, default=base.n_ubatch, help="n_ubatch: physical batch")
    add("--cache-type-k", default=base.cache_type_k, help="K cache type (f16, q8_0, ...)")
    add("--cache-type-v", default=base.cache_type_v, help="V cache type (f16, q8_0, ...)")
    add("--flash-attn", choices=[f.value for f in FlashAttention],
        default=base.flash_attention.value)
    add("--no-mmap", action="store_true", help="read the file into memory")
    add("--mlock", action="store_true", help="keep the model locked in RAM")
    add("--max-queue", type=int, default=base.max_queue,
        help="requests that may wait for a slot before 503")
    add("--draft-model", "-md", type=Path, default=None,
        help="a small model of the same family (GGUF file or library name) that drafts "
        "tokens for speculative decoding")
    add("--spec", choices=[m.value for m in SpecMode], default=None,
        help="speculative decoding: draft (with --draft-model), ngram (lookup in the "
        "prompt and output, no second model) or off; default: draft with --draft-model, "
        f"else {DEFAULT_SPEC.value}")
    add("--draft-max", type=int, default=base.draft_max,
        help=f"most tokens drafted per step (default {base.draft_max}; adapts below it)")
    add("--draft-min", type=int, default=base.draft_min,
        help=f"fewest tokens worth drafting (default {base.draft_min})")
    add("--chat-format", choices=CHAT_FORMATS, default=None, metavar="NAME",
        help="parse tool calls (and that family's reasoning) in this format instead of "
        f"detecting it from the chat template: {', '.join(CHAT_FORMATS)}")
    add("--mmproj", type=Path, default=None, metavar="FILE",
        help="a vision projector (mmproj GGUF file or library name) for the model, so it "
        "reads images; a library model given by name gets the projector beside it without "
        "this")
    add("--api-key", action="append", default=[],
        help=f"require this key (repeatable; also ${API_KEY_ENV})")
    add("--require-key", dest="require_key", action="store_const", const=True, default=None,
        help="require an API key on loopback too (default: only if any key exists)")
    add("--no-require-key", dest="require_key", action="store_const", const=False,
        help="serve loopback clients without a key even if keys exist")
    add("--cors-origin", action="append", default=[],
        help="allow browser pages from this origin (repeatable)")
    add("--no-stored-keys", action="store_true",
        help="ignore the keys made with 'hearth keys create'")
    add("--private", action="store_true",
        help=f"serve only the holder of ${WORKER_TOKEN_ENV} (the app's endpoint is off)")
    add("--prompt-cache", default=None, metavar="DIR|off",
        help="save long prompts' KV states in this folder, so they survive a restart or a "
        "model switch (default: the data folder's prompt-cache; 'off' disables it)")
    add("--prompt-cache-max", type=_gib, default=None, metavar="GIB",
        help="the prompt cache's size budget; the least recently used go first "
        "(default: 10%% of the free space, at most 20 GiB)")
    add("--prompt-cache-min-tokens", type=_positive, default=DEFAULT_MIN_TOKENS, metavar="N",
        help="save a prompt once this many of its tokens are not on disk yet "
        f"(default {DEFAULT_MIN_TOKENS})")
    residency = ResidencySettings()
    add("--max-models", type=_positive, default=residency.max_models, metavar="N",
        help="models loaded at once; the least recently used idle one loaded on demand "
        "makes room, never one loaded with --model or the admin load "
        f"(default {residency.max_models})")
    add("--memory-budget", type=_gib, default=None, metavar="GIB",
        help="memory every loaded model may hold together (default: usable RAM plus VRAM, "
        "less headroom, when the server starts)")
    add("--jit-ttl", type=_seconds, default=residency.jit_ttl_s, metavar="SECONDS",
        help="unload a model that a request loaded after this many idle seconds "
        f"(default {residency.jit_ttl_s:.0f}; 0 keeps it until evicted; --ttl applies to "
        "every model)")
    add("--load-queue-timeout", type=_seconds, default=residency.load_queue_timeout_s,
        metavar="SECONDS",
        help="how long a request waits for memory held by busy models before a 503 "
        f"(default {residency.load_queue_timeout_s:.0f})")
    add("--parent-pid", type=int, default=None, help=argparse.SUPPRESS)  # fmt: skip
