"""Real-model speed: Hearth against llama-server on Gemma 3 270M (issue 21, part 5).

    .venv/bin/python bench/real_model_speed.py \
        --llama-server /work/llama-server-build/bin/llama-server

Both servers load the same GGUF (real_model.py fetches it; ``--model`` takes another)
with the same threads, slots and context, flash attention off (see engine.py). Each
round, in an order that alternates between rounds so neither server always goes first:

- single stream: one greedy ``/v1/completions`` stream of ``--max-tokens`` tokens from a
  new prompt, the same prompt on both servers; decode tok/s is
  ``(tokens - 1) / (last token - first token)``, and the two replies are compared;
- concurrent TTFT: 4, then 8 new distinct prompts of 28-32 words sent at once (8
  tokens each); the round's value is the median TTFT of the N requests.

Ratios are medians of per-round ratios (Hearth / llama-server). Every end-of-generation
token is banned through ``logit_bias``, so each stream runs its full length. A
measurement during which other processes took more than ``--max-noise`` of the CPU is
repeated (engine.py's CpuMeter). The servers' CPU time per generated token in the single
stream is reported too: unlike wall time it barely moves when the machine is busy.
Exit status 1 if a request failed or a greedy reply differed between the servers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import secrets
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import httpx
import llama_cpp

from engine import (
    BIAS_BAN,
    REQUEST_TIMEOUT_S,
    TTFT_MAX_TOKENS,
    CpuMeter,
    LoadResult,
    Server,
    StreamResult,
    Target,
    fmt,
    free_port,
    hearth_argv,
    llama_server_argv,
    machine,
    median_of,
    paired,
    prompt_text,
    run_load,
    spread,
    start_server,
    stream_completion,
    table,
)
from gguf_synth import CACHE_DIR
from real_model import ensure_real_model

T = TypeVar("T")
CONCURRENT = (4, 8)


@dataclass
class Side:
    """One server's results, one entry per round."""

    decode: list[float] = field(default_factory=list)
    cpu_ms_per_token: list[float] = field(default_factory=list)
    ttft: dict[int, list[float]] = field(default_factory=dict)
    replies: list[str] = field(default_factory=list)
    failed: int = 0
    errors: set[str] = field(default_factory=set)


_QUIET = llama_cpp.llama_log_callback(lambda _level, _text, _data: None)


def eog_bias(model: Path) -> dict[str, float]:
    """logit_bias banning the model's end-of-generation tokens (vocabulary-only load)."""
    llama_cpp.llama_log_set(_QUIET, None)  # its load log would bury the progress lines
    llama_cpp.llama_backend_init()
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    handle = llama_cpp.llama_model_load_from_file(str(model).encode(), params)
    if not handle:
        raise RuntimeError(f"could not read the vocabulary of {model}")
    try:
        vocab = llama_cpp.llama_model_get_vocab(handle)
        n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
        return {str(t): BIAS_BAN for t in range(n_vocab) if llama_cpp.llama_vocab_is_eog(vocab, t)}
    finally:
        llama_cpp.llama_model_free(handle)


async def one_stream(
    url: str, prompt: str, max_tokens: int, bias: dict[str, float]
) -> StreamResult:
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT_S) as client:
        return await stream_completion(client, url, prompt, max_tokens, bias)


def decode_tps(stream: StreamResult) -> float:
    times = stream.token_times
    if not stream.ok or len(times) < 2 or times[-1] <= times[0]:
        return float("nan")
    return (stream.n_tokens - 1) / (times[-1] - times[0])


@dataclass
class Bench:
    args: argparse.Namespace
    bias: dict[str, float]
    meter: CpuMeter = field(default_factory=CpuMeter)
    sides: dict[str, Side] = field(default_factory=dict)
    noise: list[float] = field(default_factory=list)
    retries: int = 0

    def guarded(self, label: str, measure: Callable[[], T]) -> T:
        """Repeat ``measure`` while other processes took over --max-noise of the CPU,
        keeping the quietest attempt."""
        best: tuple[float, T] | None = None
        for attempt in range(self.args.retries + 1):
            before = self.meter.snapshot()
            value = measure()
            noise = self.meter.foreign(before, self.meter.snapshot())
            if best is None or noise < best[0]:
                best = (noise, value)
            if noise <= self.args.max_noise:
                break
            if attempt < self.args.retries:
                self.retries += 1
                progress(f"  {label}: other processes took {noise:.0%} of the CPU; again")
        assert best is not None
        self.noise.append(best[0])
        return best[1]

    def side(self, server: Server) -> Side:
        return self.sides.setdefault(server.name, Side())

    def single(self, server: Server, prompt: str) -> None:
        def measure() -> tuple[StreamResult, float]:
            before = CpuMeter.pid_jiffies(server.process.pid)
            stream = asyncio.run(
                one_stream(server.base_url, prompt, self.args.max_tokens, self.bias)
            )
            jiffies = CpuMeter.pid_jiffies(server.process.pid) - before
            return stream, jiffies

        stream, jiffies = self.guarded(f"{server.name} single", measure)
        side = self.side(server)
        side.decode.append(decode_tps(stream))
        hz = self.meter.hz
        side.cpu_ms_per_token.append(1000 * jiffies / hz / max(stream.n_tokens, 1))
        side.replies.append(stream.text)
        self._count(side, [stream])
        progress(f"  {server.name:<12} single stream {side.decode[-1]:6.1f} tok/s")

    def concurrent(self, server: Server, n: int, prompts: list[str]) -> None:
        def measure() -> LoadResult:
            return asyncio.run(run_load(server.base_url, prompts, TTFT_MAX_TOKENS, self.bias))

        load = self.guarded(f"{server.name} {n} new prompts", measure)
        side = self.side(server)
        ttfts = [s.ttft for s in load.streams if s.ok]
        side.ttft.setdefault(n, []).append(statistics.median(ttfts) if ttfts else float("nan"))
        self._count(side, load.streams)
        progress(f"  {server.name:<12} {n} new prompts: p50 TTFT {side.ttft[n][-1] * 1000:6.1f} ms")

    @staticmethod
    def _count(side: Side, streams: list[StreamResult]) -> None:
        for stream in streams:
            if not stream.ok:
                side.failed += 1
                side.errors.add(stream.error or "")

    def run_round(self, servers: list[Server], round_no: int) -> None:
        order = servers if round_no % 2 == 0 else servers[::-1]
        nonce = secrets.token_hex(3)
        prompt = prompt_text(f"{nonce}-single", 30, round_no)
        for server in order:
            self.single(server, prompt)
        for n in CONCURRENT:
            # Lengths differ by a few tokens, as real prompts do (equal ones would hide
            # how a server splits their prefill: prefill_passes.py).
            prompts = [prompt_text(f"{nonce}-{n}-{i}", 28 + i % 5, i + round_no) for i in range(n)]
            for server in order:
                self.concurrent(server, n, prompts)

    def warm_up(self, server: Server) -> None:
        prompts = [prompt_text(f"warm-{i}", 20, i) for i in range(2)]
        asyncio.run(run_load(server.base_url, prompts, 8, self.bias))


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextlib.contextmanager
def servers(args: argparse.Namespace, meter: CpuMeter) -> Iterator[list[Server]]:
    started: list[Server] = []
    try:
        port = free_port()
        argv = hearth_argv(args, args.model, port)
        started.append(start_server("hearth", argv, port, args.log_dir))
        if args.llama_server:
            port = free_port()
            argv = llama_server_argv(args, args.model, port)
            started.append(start_server("llama-server", argv, port, args.log_dir))
        meter.pids = [s.process.pid for s in started]
        yield started
    finally:
        for server in started:
            server.stop()


def report(bench: Bench, before: str) -> str:
    args = bench.args
    headers = ["median (min-max)", *bench.sides]
    rows = [
        ["single stream, decode tok/s", *(spread(s.decode) for s in bench.sides.values())],
        ["single stream, server CPU ms/token",
         *(spread(s.cpu_ms_per_token, 2) for s in bench.sides.values())],
    ]  # fmt: skip
    for n in CONCURRENT:
        ms = {name: [t * 1000 for t in s.ttft.get(n, [])] for name, s in bench.sides.items()}
        rows.append([f"{n} new prompts, p50 TTFT ms", *(spread(v) for v in ms.values())])
    rows.append(["failed requests", *(str(s.failed) for s in bench.sides.values())])
    parts = [
        f"model: {args.model.name}; threads {args.threads}, {args.parallel} slots x {args.ctx} "
        f"ctx, flash-attn {args.flash_attn}, {args.max_tokens} tokens single stream, "
        f"{args.rounds} rounds",
        f"machine: {before}",
        f"CPU taken by other processes during the measurements kept: median "
        f"{median_of(bench.noise):.1%}, max {max(bench.noise, default=0.0):.1%} "
        f"({bench.retries} noisy measurements repeated)",
        table(headers, rows),
    ]
    found = targets(bench)
    if found:
        verdicts = []
        for t in found:
            verdict = {True: "met", False: "NOT MET", None: "n/a"}[t.met]
            bound = f"{'>=' if t.at_least else '<='} {t.bound:g}"
            verdicts.append([t.name, fmt(t.value, 3), bound, verdict])
        parts.append(table(["target (median of per-round ratios)", "value", "needed", "verdict"],
                           verdicts))  # fmt: skip
        h, ls = bench.sides["hearth"], bench.sides["llama-server"]
        cpu = paired(h.cpu_ms_per_token, ls.cpu_ms_per_token)
        parts.append(f"Hearth / llama-server, server CPU time per token: {fmt(cpu, 3)}")
    return "\n\n".join(parts)


def targets(bench: Bench) -> list[Target]:
    h, ls = bench.sides.get("hearth"), bench.sides.get("llama-server")
    if h is None or ls is None:
        return []
    same = sum(a == b for a, b in zip(h.replies, ls.replies, strict=False))
    return [
        Target("Hearth / llama-server, single-stream decode", paired(h.decode, ls.decode), 0.98,
               True),
        *(Target(f"Hearth / llama-server, p50 TTFT, {n} new prompts",
                 paired(h.ttft.get(n, []), ls.ttft.get(n, [])), 1.1, False) for n in CONCURRENT),
        Target("greedy replies that differ", float(len(h.replies) - same), 0, False),
    ]  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--model", type=Path, help="GGUF (default: Gemma 3 270M Q4_K_M, fetched)")
    p.add_argument("--llama-server", type=Path, help="llama.cpp's llama-server, to compare with")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--parallel", type=int, default=8, help="slots on each server")
    p.add_argument("--ctx", type=int, default=2048, help="context per slot")
    p.add_argument("--max-tokens", type=int, default=128, help="tokens of the single stream")
    p.add_argument("--flash-attn", choices=["on", "off"], default="off")
    p.add_argument("--max-noise", type=float, default=0.05)
    p.add_argument("--retries", type=int, default=2)
    p.add_argument("--log-dir", type=Path, default=CACHE_DIR / "logs")
    p.add_argument("--hearth-arg", action="append", default=[], metavar="ARG")
    p.add_argument("--llama-server-arg", action="append", default=[], metavar="ARG")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.model = args.model or ensure_real_model()
    if "--swa-full" not in args.llama_server_arg:
        # Hearth keeps a full-size sliding-window cache; llama-server's smaller one makes it
        # decode a prompt's last 4 tokens apart (its checkpoints), a batch split that moves
        # this model's logits by up to 0.3 nats (docs/benchmarks.md, greedy replies)
        args.llama_server_arg.append("--swa-full")
    args.log_dir.mkdir(parents=True, exist_ok=True)
    before = machine()
    started = time.perf_counter()
    bench = Bench(args, eog_bias(args.model))
    with servers(args, bench.meter) as up:
        for server in up:
            bench.warm_up(server)
        for round_no in range(args.rounds):
            progress(f"round {round_no + 1}/{args.rounds}")
            bench.run_round(up, round_no)
    print(report(bench, before))
    print(f"\nwall time {time.perf_counter() - started:.0f} s; server logs in {args.log_dir}")
    for name, side in bench.sides.items():
        for error in sorted(side.errors):
            print(f"{name} error: {error}", file=sys.stderr)
    differ = any(t.name.startswith("greedy") and t.met is False for t in targets(bench))
    return 1 if differ or any(s.failed for s in bench.sides.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
