"""Command-line options shared by ``hearth serve`` and ``hearth --worker``."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from hearth.core.model_info import FlashAttention, LoadConfig, SplitMode

log = logging.getLogger(__name__)

DEFAULT_PORT = 8677
WORKER_TOKEN_ENV = "HEARTH_WORKER_TOKEN"
API_KEY_ENV = "HEARTH_API_KEY"


@dataclass(frozen=True)
class ServeOptions:
    load: LoadConfig
    host: str
    port: int
    api_keys: tuple[str, ...]
    cors_origins: tuple[str, ...]
    parent_pid: int | None
    announce: bool  # print the listening line on stdout for the supervisor
    initial_model: bool = True  # load.model_path at start (else wait for JIT or /load)
    jit: bool = True  # requests naming a library model load it
    ttl_s: float | None = None  # unload after this long idle

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        "-m",
        type=Path,
        default=None,
        help="GGUF file to load at start (else the first request loads one)",
    )
    parser.add_argument(
        "--no-jit", action="store_true", help="never load library models named by requests"
    )
    parser.add_argument(
        "--ttl", type=float, default=None, help="unload the model after this many idle seconds"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1; others need --api-key)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port (default {DEFAULT_PORT}; 0 picks a free one)",
    )
    parser.add_argument(
        "--ctx",
        type=int,
        default=None,
        help="context tokens per slot (default: 4096, or the model's trained context if smaller)",
    )
    parser.add_argument(
        "--parallel", "-np", type=int, default=4, help="slots: requests decoded at once (default 4)"
    )
    parser.add_argument(
        "--n-gpu-layers",
        "-ngl",
        type=int,
        default=-1,
        help="layers to offload to the GPU (-1 all, 0 none)",
    )
    parser.add_argument(
        "--main-gpu",
        "-mg",
        type=int,
        default=0,
        help="GPU for the whole model when --split-mode none",
    )
    parser.add_argument(
        "--split-mode",
        "-sm",
        choices=[m.value for m in SplitMode],
        default=SplitMode.LAYER.value,
        help="how to split the model across GPUs",
    )
    parser.add_argument(
        "--tensor-split",
        "-ts",
        type=_split_list,
        default=(),
        help="share of the model per GPU, e.g. 3,1",
    )
    parser.add_argument(
        "--kv-unified", action="store_true", help="one KV buffer shared by all slots"
    )
    parser.add_argument(
        "--threads", "-t", type=int, default=0, help="decode threads (0 = physical cores)"
    )
    parser.add_argument(
        "--threads-batch", type=int, default=0, help="prompt threads (0 = same as --threads)"
    )
    parser.add_argument(
        "--batch",
        type=int,
        default=2048,
        help="n_batch: most prompt tokens per decode step while no stream is decoding "
        "(while streams decode, a step takes at most --ubatch)",
    )
    parser.add_argument("--ubatch", type=int, default=512, help="n_ubatch: physical batch")
    parser.add_argument("--cache-type-k", default="f16", help="K cache type (f16, q8_0, ...)")
    parser.add_argument("--cache-type-v", default="f16", help="V cache type (f16, q8_0, ...)")
    parser.add_argument(
        "--flash-attn", choices=[f.value for f in FlashAttention], default=FlashAttention.AUTO.value
    )
    parser.add_argument("--no-mmap", action="store_true", help="read the file into memory")
    parser.add_argument("--mlock", action="store_true", help="keep the model locked in RAM")
    parser.add_argument(
        "--max-queue", type=int, default=64, help="requests that may wait for a slot before 503"
    )
    parser.add_argument(
        "--api-key",
        action="append",
        default=[],
        help=f"require this key (repeatable; also ${API_KEY_ENV})",
    )
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        help="allow browser pages from this origin (repeatable)",
    )
    parser.add_argument(
        "--no-stored-keys",
        action="store_true",
        help="ignore the keys made with 'hearth keys create'",
    )
    parser.add_argument("--parent-pid", type=int, default=None, help=argparse.SUPPRESS)


def stored_keys() -> list[str]:
    """Keys made with 'hearth keys create' (the GUI's own worker uses only its token)."""
    from hearth.config.api_keys import load_keys
    from hearth.config.secrets import SecretStoreError

    try:
        return [k.key for k in load_keys()]
    except SecretStoreError as exc:
        log.warning("cannot read API keys from the keyring: %s", exc.message)
        return []


def _split_list(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 3,1; got {text!r}") from None
    if any(v < 0 for v in values) or not any(values):
        raise argparse.ArgumentTypeError("tensor split values must be >= 0, not all 0")
    return values


def options_from_args(args: argparse.Namespace, *, worker: bool) -> ServeOptions:
    keys = [k for k in args.api_key if k]
    if os.environ.get(API_KEY_ENV):
        keys.append(os.environ[API_KEY_ENV])
    if os.environ.get(WORKER_TOKEN_ENV):
        keys.append(os.environ[WORKER_TOKEN_ENV])
    if not args.no_stored_keys:  # the GUI passes this while its endpoint is "off"
        keys.extend(stored_keys())
    load = LoadConfig(
        model_path=args.model.expanduser() if args.model else Path(),
        n_ctx=args.ctx,
        n_parallel=args.parallel,
        n_gpu_layers=args.n_gpu_layers,
        main_gpu=args.main_gpu,
        split_mode=SplitMode(args.split_mode),
        tensor_split=args.tensor_split,
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
    )
    return ServeOptions(
        load=load,
        host=args.host,
        port=args.port,
        api_keys=tuple(keys),
        cors_origins=tuple(args.cors_origin),
        parent_pid=args.parent_pid,
        announce=worker,
        initial_model=args.model is not None,
        jit=not args.no_jit,
        ttl_s=args.ttl if args.ttl and args.ttl > 0 else None,
    )


def validate_options(options: ServeOptions) -> list[str]:
    """Problems that must stop the server before it binds anything."""
    problems = []
    if not options.loopback and not options.api_keys:
        problems.append(
            f"Refusing to listen on {options.host} without an API key: anyone on the network "
            f"could use the model. Pass --api-key KEY (or set {API_KEY_ENV})."
        )
    load = options.load
    if load.n_ctx is not None and load.n_ctx < 16:
        problems.append("--ctx must be at least 16 tokens.")
    if not 1 <= load.n_parallel <= 64:
        problems.append("--parallel must be between 1 and 64.")
    if load.n_batch < 1 or load.n_ubatch < 1:
        problems.append("--batch and --ubatch must be positive.")
    elif load.n_batch < load.n_parallel:
        problems.append("--batch must be at least --parallel: each decoding slot adds a token.")
    if not 0 <= options.port <= 65535:
        problems.append("--port must be between 0 and 65535.")
    return problems
