"""Engine benchmark: direct llama-cpp-python vs Hearth (vs llama.cpp's llama-server).

One run prints one table. Run it from the repository root with the project's venv:

    .venv/bin/python bench/engine.py [--model M.gguf] [--llama-server PATH]

Definitions (the same for every server):

- decode tok/s of one stream: (tokens - 1) / (time of last token - time of first token),
  so prompt processing and the first sample are outside the window.
- aggregate tok/s of N concurrent streams (the number the targets use): sum over streams
  of (tokens - 1), divided by (last token of any stream - first token of any stream).
  For N = 1 this is the line above.
- end to end tok/s: all tokens / (last token of any stream - first request sent); it
  counts every prompt's processing, and does not depend on when the first token came.
- steady state tok/s: N / median gap between two tokens of one stream; the decode rate
  once every stream is running.
- TTFT: from sending the request to receiving the first non-empty streamed text.
- A request fails on a transport error, a non-200 status, an error event in the stream,
  or a token count other than max_tokens (EOS/EOT are banned through logit_bias).

Each round measures direct decode, then each load on each server back to back, then
the TTFT pairs. Tables show medians over rounds (and the range); ratios are medians of
per-round ratios, so slow phases of a shared machine hit both sides of a ratio alike.
A measurement during which other processes took more than --max-noise of the CPU is
repeated (up to --retries times) and the quietest attempt is kept.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import math
import os
import platform
import secrets
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import httpx
import llama_cpp

from gguf_synth import CACHE_DIR, ensure_bench_model

_TEXT = (
    "the quick brown fox jumps over a lazy dog while seven wizards quietly pack boxes of "
    "liquor jugs near an old stone bridge where people come to see how the river turns "
    "under grey skies and talk about work life model cache server stream token batch"
)
_WORDS = _TEXT.split()

T = TypeVar("T")

REQUEST_TIMEOUT_S = 300.0
HEALTH_TIMEOUT_S = 180.0
TTFT_MAX_TOKENS = 8
BIAS_BAN = -100.0  # the OpenAI minimum; every server here treats it as "never"


# --------------------------------------------------------------------------- results


@dataclass
class StreamResult:
    sent: float
    token_times: list[float] = field(default_factory=list)
    n_tokens: int = 0
    cached_tokens: int | None = None
    error: str | None = None
    text: str = ""  # the streamed reply, to compare greedy output between servers

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def ttft(self) -> float:
        return self.token_times[0] - self.sent if self.token_times else float("nan")


@dataclass
class LoadResult:
    streams: list[StreamResult]

    @property
    def failures(self) -> int:
        return sum(1 for s in self.streams if not s.ok)

    @property
    def aggregate_tps(self) -> float:
        timed = [s for s in self.streams if s.ok and len(s.token_times) >= 2]
        if not timed:
            return float("nan")
        start = min(s.token_times[0] for s in timed)
        end = max(s.token_times[-1] for s in timed)
        tokens = sum(s.n_tokens - 1 for s in timed)
        return tokens / (end - start) if end > start else float("nan")

    @property
    def end_to_end_tps(self) -> float:
        """All tokens over the time from the first request sent to the last token."""
        timed = [s for s in self.streams if s.ok and s.token_times]
        if not timed:
            return float("nan")
        end = max(s.token_times[-1] for s in timed)
        return sum(s.n_tokens for s in timed) / (end - min(s.sent for s in self.streams))

    @property
    def steady_tps(self) -> float:
        """N / median gap between two tokens of a stream: the rate once all are running."""
        gaps = [b - a for s in self.streams if s.ok for a, b in itertools.pairwise(s.token_times)]
        return len(self.streams) / statistics.median(gaps) if gaps else float("nan")


@dataclass
class TtftResult:
    prompt_tokens: int
    cold: StreamResult
    follow: StreamResult

    @property
    def failures(self) -> int:
        return int(not self.cold.ok) + int(not self.follow.ok)


@dataclass
class ServerRecord:
    """One server's results; list index = round number, so rounds pair up across servers."""

    name: str
    loads: dict[int, list[LoadResult]] = field(default_factory=dict)
    ttfts: list[TtftResult] = field(default_factory=list)

    def agg(self, n: int) -> list[float]:
        return [r.aggregate_tps for r in self.loads.get(n, [])]

    def end_to_end(self, n: int) -> list[float]:
        return [r.end_to_end_tps for r in self.loads.get(n, [])]

    def steady(self, n: int) -> list[float]:
        return [r.steady_tps for r in self.loads.get(n, [])]

    def cold(self) -> list[float]:
        return [t.cold.ttft for t in self.ttfts]

    def follow(self) -> list[float]:
        return [t.follow.ttft for t in self.ttfts]

    def failures(self) -> int:
        loads = sum(r.failures for runs in self.loads.values() for r in runs)
        return loads + sum(t.failures for t in self.ttfts)

    def requests(self) -> int:
        loads = sum(len(r.streams) for runs in self.loads.values() for r in runs)
        return loads + 2 * len(self.ttfts)

    def errors(self) -> set[str]:
        streams = [s for runs in self.loads.values() for r in runs for s in r.streams]
        streams += [s for t in self.ttfts for s in (t.cold, t.follow)]
        return {s.error for s in streams if s.error}


def median_of(values: list[float]) -> float:
    clean = [v for v in values if not math.isnan(v)]
    return statistics.median(clean) if clean else float("nan")


def paired(numerators: list[float], denominators: list[float]) -> float:
    """Median over rounds of the per-round ratio; both sides are measured seconds apart."""
    return median_of([a / b for a, b in zip(numerators, denominators, strict=False) if b])


# --------------------------------------------------------------------------- prompts


def prompt_text(tag: str, n_words: int, seed: int) -> str:
    """A distinct prompt: a unique tag first (no shared prefix), then seeded filler."""
    words = [_WORDS[(seed * 7 + i * (seed % 5 + 3)) % len(_WORDS)] for i in range(n_words)]
    return f"Request {tag}: " + " ".join(words) + "."


def long_prompt(vocab: llama_cpp.Llama, tag: str, n_tokens: int) -> tuple[str, int]:
    """A prompt of about ``n_tokens`` tokens (BOS included), and its exact length."""

    def build(n_words: int) -> tuple[str, int]:
        text = prompt_text(tag, n_words, seed=1)
        return text, len(vocab.tokenize(text.encode(), add_bos=True, special=False))

    low, high = 1, n_tokens  # every word is at least one token
    while low < high:  # the most words that still fit
        mid = (low + high + 1) // 2
        low, high = (mid, high) if build(mid)[1] <= n_tokens else (low, mid - 1)
    return build(low)


def eog_bias(vocab: llama_cpp.Llama) -> dict[str, float]:
    """logit_bias banning every end-of-generation token of the model (EOS, EOT, ...)."""
    v = llama_cpp.llama_model_get_vocab(vocab.model)
    n_vocab = llama_cpp.llama_vocab_n_tokens(v)
    return {str(t): BIAS_BAN for t in range(n_vocab) if llama_cpp.llama_vocab_is_eog(v, t)}


# --------------------------------------------------------------------------- direct


def direct_api_tps(
    llm: llama_cpp.Llama, prompt: str, max_tokens: int, bias: dict[str, float]
) -> float:
    """Decode tok/s of Llama.create_completion streaming, greedy, EOS banned."""
    llm.reset()
    times: list[float] = []
    chunks = llm.create_completion(
        prompt,
        max_tokens=max_tokens,
        temperature=0.0,
        stream=True,
        logit_bias={int(k): v for k, v in bias.items()},
    )
    for chunk in chunks:
        if chunk["choices"][0]["text"]:
            times.append(time.perf_counter())
    if len(times) != max_tokens:
        raise RuntimeError(f"direct run produced {len(times)} tokens, wanted {max_tokens}")
    return (len(times) - 1) / (times[-1] - times[0])


def direct_native_tps(
    llm: llama_cpp.Llama, prompt: str, max_tokens: int, bias: dict[str, float]
) -> float:
    """Decode tok/s of a bare llama_decode loop with a native greedy sampler chain.

    The floor of what any Python server on llama-cpp-python can reach for one stream.
    """
    llm.reset()
    memory = llama_cpp.llama_get_memory(llm.ctx)
    llama_cpp.llama_memory_clear(memory, True)
    chain = _native_greedy_chain(llm, bias)
    tokens = llm.tokenize(prompt.encode(), add_bos=True, special=False)
    times: list[float] = []
    try:
        array = (llama_cpp.llama_token * len(tokens))(*tokens)
        step = (llama_cpp.llama_token * 1)()
        batch = llama_cpp.llama_batch_get_one(array, len(tokens))
        for _ in range(max_tokens):
            if llama_cpp.llama_decode(llm.ctx, batch) != 0:
                raise RuntimeError("llama_decode failed in the native loop")
            step[0] = llama_cpp.llama_sampler_sample(chain, llm.ctx, -1)
            times.append(time.perf_counter())
            batch = llama_cpp.llama_batch_get_one(step, 1)
    finally:
        llama_cpp.llama_sampler_free(chain)
        llama_cpp.llama_memory_clear(memory, True)
    return (len(times) - 1) / (times[-1] - times[0])


def _native_greedy_chain(llm: llama_cpp.Llama, bias: dict[str, float]) -> llama_cpp.llama_sampler_p:
    chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
    entries = (llama_cpp.llama_logit_bias * len(bias))()
    for i, (token, value) in enumerate(bias.items()):
        entries[i] = llama_cpp.llama_logit_bias(int(token), value)
    n_vocab = llm.n_vocab()
    llama_cpp.llama_sampler_chain_add(
        chain, llama_cpp.llama_sampler_init_logit_bias(n_vocab, len(bias), entries)
    )
    llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_greedy())
    return chain


# --------------------------------------------------------------------------- servers


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    name: str
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self, n: int = 30) -> str:
        lines = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(lines[-n:])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


def start_server(name: str, argv: list[str], port: int, log_dir: Path) -> Server:
    log_path = log_dir / f"{name}.log"
    env = {k: v for k, v in os.environ.items() if k != "HEARTH_API_KEY"}
    with log_path.open("wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    server = Server(name, process, port, log_path)
    try:
        wait_healthy(server)
    except BaseException:
        server.stop()
        raise
    return server


def wait_healthy(server: Server) -> None:
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"{server.name} exited early:\n{server.log_tail()}")
        with contextlib.suppress(httpx.HTTPError, ValueError):
            response = httpx.get(f"{server.base_url}/health", timeout=2)
            if response.status_code == 200 and response.json().get("status") == "ok":
                return
        time.sleep(0.2)
    raise TimeoutError(f"{server.name} did not become healthy:\n{server.log_tail()}")


def hearth_argv(args: argparse.Namespace, model: Path, port: int) -> list[str]:
    return [
        sys.executable, "-m", "hearth", "serve",
        "--model", str(model), "--port", str(port),
        "--parallel", str(args.parallel), "--ctx", str(args.ctx),
        "--threads", str(args.threads), "--flash-attn", args.flash_attn,
        *args.hearth_arg,
    ]  # fmt: skip


def llama_server_argv(args: argparse.Namespace, model: Path, port: int) -> list[str]:
    # llama-server's -c is the total context of all slots; Hearth's --ctx is per slot.
    return [
        str(args.llama_server), "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
        "-np", str(args.parallel), "-c", str(args.parallel * args.ctx),
        "-t", str(args.threads), "-tb", str(args.threads), "--cont-batching",
        "-fa", args.flash_attn,
        *args.llama_server_arg,
    ]  # fmt: skip


# --------------------------------------------------------------------------- clients


async def stream_completion(
    client: httpx.AsyncClient, url: str, prompt: str, max_tokens: int, bias: dict[str, float]
) -> StreamResult:
    body = {
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
        "logit_bias": bias,
    }
    result = StreamResult(sent=time.perf_counter())
    usage_tokens: int | None = None
    try:
        async with client.stream("POST", f"{url}/v1/completions", json=body) as response:
            if response.status_code != 200:
                await response.aread()
                result.error = f"HTTP {response.status_code}: {response.text[:200]}"
                return result
            async for line in response.aiter_lines():
                usage_tokens = _read_event(line, result, usage_tokens)
                if result.error:
                    return result
    except httpx.HTTPError as exc:
        result.error = f"{type(exc).__name__}: {exc}"
        return result
    result.n_tokens = usage_tokens if usage_tokens is not None else len(result.token_times)
    if result.n_tokens != max_tokens:
        result.error = f"got {result.n_tokens} tokens, wanted {max_tokens}"
    return result


def _read_event(line: str, result: StreamResult, usage_tokens: int | None) -> int | None:
    """Record one SSE line; returns the completion token count once usage is seen."""
    if not line.startswith("data:"):
        return usage_tokens
    data = line[len("data:") :].strip()
    if data == "[DONE]":
        return usage_tokens
    event = json.loads(data)
    if "error" in event:
        result.error = str(event["error"])[:200]
        return usage_tokens
    now = time.perf_counter()
    for choice in event.get("choices") or []:
        if choice.get("text"):
            result.token_times.append(now)
            result.text += choice["text"]
    usage = event.get("usage")
    if usage:
        details = usage.get("prompt_tokens_details") or {}
        result.cached_tokens = details.get("cached_tokens", result.cached_tokens)
        usage_tokens = int(usage["completion_tokens"])
    timings = event.get("timings") or {}
    if "cache_n" in timings:  # llama-server reports its prefix reuse here
        result.cached_tokens = int(timings["cache_n"])
    return usage_tokens


async def run_load(
    url: str, prompts: list[str], max_tokens: int, bias: dict[str, float]
) -> LoadResult:
    limits = httpx.Limits(max_connections=len(prompts) + 2)
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT_S, limits=limits) as client:
        streams = await asyncio.gather(
            *(stream_completion(client, url, p, max_tokens, bias) for p in prompts)
        )
    return LoadResult(list(streams))


async def run_ttft(url: str, prompt: str, n_prompt: int, bias: dict[str, float]) -> TtftResult:
    tail = " Now answer in one line: what comes next?"
    # A new connection per request: a kept-alive one may be closed by the server
    # between the two requests, which would fail the follow-up for the wrong reason.
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT_S) as client:
        cold = await stream_completion(client, url, prompt, TTFT_MAX_TOKENS, bias)
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT_S) as client:
        follow = await stream_completion(client, url, prompt + tail, TTFT_MAX_TOKENS, bias)
    return TtftResult(n_prompt, cold, follow)


# --------------------------------------------------------------------------- driver


class CpuMeter:
    """How much of the machine's CPU went to processes other than this bench's.

    The dev machine is shared, and llama.cpp's spinning thread barriers collapse when
    another process takes a core, so every measurement is checked and retried if noisy.
    """

    def __init__(self) -> None:
        self.pids: list[int] = []
        self.hz = os.sysconf("SC_CLK_TCK")
        self._ncpu = os.cpu_count() or 1

    def snapshot(self) -> tuple[float, int, float]:
        """(wall time, busy jiffies of the whole machine, jiffies of this bench's processes)."""
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
        busy = sum(fields) - fields[3] - fields[4]  # all but idle and iowait; steal counts
        own = sum(os.times()[:2]) * self.hz + sum(self.pid_jiffies(p) for p in self.pids)
        return time.perf_counter(), busy, own

    def foreign(self, before: tuple[float, int, float], after: tuple[float, int, float]) -> float:
        wall = after[0] - before[0]
        other = (after[1] - before[1]) - (after[2] - before[2])
        return max(0.0, other) / (wall * self.hz * self._ncpu) if wall > 0 else 0.0

    @staticmethod
    def pid_jiffies(pid: int) -> int:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return 0
        fields = stat.rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime, stime


@dataclass
class Bench:
    args: argparse.Namespace
    model: Path
    llm: llama_cpp.Llama
    bias: dict[str, float]
    meter: CpuMeter = field(default_factory=CpuMeter)
    direct_api: list[float] = field(default_factory=list)
    direct_native: list[float] = field(default_factory=list)
    records: dict[str, ServerRecord] = field(default_factory=dict)
    noise: list[float] = field(default_factory=list)  # of the measurements kept
    retries: int = 0
    discarded_failures: int = 0  # failed requests in measurements repeated for noise

    def guarded(self, label: str, measure: Callable[[], T], failures: Callable[[T], int]) -> T:
        """Run ``measure`` again while other processes took over --max-noise of the CPU."""
        best: tuple[float, T] | None = None
        for attempt in range(self.args.retries + 1):
            before = self.meter.snapshot()
            value = measure()
            noise = self.meter.foreign(before, self.meter.snapshot())
            if best is None or noise < best[0]:
                if best is not None:
                    self.discarded_failures += failures(best[1])
                best = (noise, value)
            else:
                self.discarded_failures += failures(value)
            if noise <= self.args.max_noise:
                break
            if attempt < self.args.retries:
                self.retries += 1
                _progress(f"  {label}: other processes took {noise:.0%} of the CPU; again")
        assert best is not None
        self.noise.append(best[0])
        return best[1]

    def record(self, server: Server) -> ServerRecord:
        return self.records.setdefault(server.name, ServerRecord(server.name))

    def run_direct(self, round_no: int) -> None:
        prompt = prompt_text(f"direct-{round_no}-{secrets.token_hex(3)}", 30, round_no)
        mt, llm, bias = self.args.max_tokens, self.llm, self.bias
        api = self.guarded("direct", lambda: direct_api_tps(llm, prompt, mt, bias), _none)
        native = self.guarded("direct", lambda: direct_native_tps(llm, prompt, mt, bias), _none)
        self.direct_api.append(api)
        self.direct_native.append(native)
        _progress(f"  direct       API {api:.1f} tok/s, native loop {native:.1f} tok/s")

    def run_load(self, server: Server, n: int, round_no: int) -> None:
        def measure() -> LoadResult:
            nonce = secrets.token_hex(3)
            prompts = [prompt_text(f"{nonce}-{n}-{i}", 30, i + round_no) for i in range(n)]
            return asyncio.run(run_load(server.base_url, prompts, self.args.max_tokens, self.bias))

        load = self.guarded(f"{server.name} {n} streams", measure, lambda r: r.failures)
        self.record(server).loads.setdefault(n, []).append(load)
        failed = f", {load.failures} failed" if load.failures else ""
        _progress(
            f"  {server.name:<12} {n} stream(s): {load.aggregate_tps:6.1f} tok/s "
            f"(steady {load.steady_tps:6.1f}){failed}"
        )

    def run_ttft(self, server: Server) -> None:
        def measure() -> TtftResult:
            text, count = long_prompt(self.llm, secrets.token_hex(4), self.args.prompt_tokens)
            return asyncio.run(run_ttft(server.base_url, text, count, self.bias))

        ttft = self.guarded(f"{server.name} TTFT", measure, lambda r: r.failures)
        self.record(server).ttfts.append(ttft)
        _progress(
            f"  {server.name:<12} TTFT cold {ttft.cold.ttft:.3f} s, "
            f"follow-up {ttft.follow.ttft:.3f} s"
        )

    def run_round(self, servers: list[Server], round_no: int) -> None:
        """Direct, then each load on each server back to back, so ratios pair up."""
        self.run_direct(round_no)
        for n in self.args.streams:
            for server in servers:
                self.run_load(server, n, round_no)
        for server in servers:
            self.run_ttft(server)

    def warm_up(self, server: Server) -> None:
        prompts = [prompt_text(f"warm-{i}", 20, i) for i in range(2)]
        asyncio.run(run_load(server.base_url, prompts, 8, self.bias))

    def failures(self) -> int:
        return sum(r.failures() for r in self.records.values()) + self.discarded_failures


def _none(_: object) -> int:
    return 0


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextlib.contextmanager
def servers(bench: Bench, log_dir: Path) -> Iterator[list[Server]]:
    started: list[Server] = []
    try:
        port = free_port()
        argv = hearth_argv(bench.args, bench.model, port)
        started.append(start_server("hearth", argv, port, log_dir))
        if bench.args.llama_server:
            port = free_port()
            argv = llama_server_argv(bench.args, bench.model, port)
            started.append(start_server("llama-server", argv, port, log_dir))
        bench.meter.pids = [s.process.pid for s in started]
        yield started
    finally:
        for server in started:
            server.stop()


def run(args: argparse.Namespace) -> Bench:
    model = args.model or ensure_bench_model()
    llm = llama_cpp.Llama(
        model_path=str(model),
        n_ctx=args.ctx,
        n_batch=512,
        n_threads=args.threads,
        n_threads_batch=args.threads,
        flash_attn=args.flash_attn == "on",
        verbose=False,
    )
    bench = Bench(args, model, llm, eog_bias(llm))
    args.log_dir.mkdir(parents=True, exist_ok=True)
    with servers(bench, args.log_dir) as up:
        for server in up:
            bench.warm_up(server)
        direct_api_tps(llm, prompt_text("warm", 10, 0), 8, bench.bias)
        for round_no in range(args.rounds):
            _progress(f"round {round_no + 1}/{args.rounds}")
            bench.run_round(up, round_no)
    return bench


# --------------------------------------------------------------------------- report


def fmt(value: float, digits: int = 1) -> str:
    return "n/a" if math.isnan(value) else f"{value:.{digits}f}"


def spread(values: list[float], digits: int = 1) -> str:
    """``median (min-max)`` of a series."""
    clean = [v for v in values if not math.isnan(v)]
    if not clean:
        return "n/a"
    low, high = fmt(min(clean), digits), fmt(max(clean), digits)
    return f"{fmt(median_of(clean), digits)} ({low}-{high})"


def _row(cells: list[str], widths: list[int]) -> str:
    return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    lines = [_row(headers, widths), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    return "\n".join([*lines, *(_row(r, widths) for r in rows)])


def absolute_table(bench: Bench) -> str:
    streams = bench.args.streams
    headers = ["tok/s: median (min-max)", *(f"{n} stream{'s' * (n > 1)}" for n in streams)]
    pad = [""] * (len(streams) - 1)
    rows = [
        ["direct llama-cpp-python, Llama API", spread(bench.direct_api), *pad],
        ["direct llama_decode loop, native", spread(bench.direct_native), *pad],
    ]
    for rec in bench.records.values():
        rows.append([rec.name, *(spread(rec.agg(n)) for n in streams)])
        rows.append([f"{rec.name}, end to end", *(spread(rec.end_to_end(n)) for n in streams)])
        rows.append([f"{rec.name}, steady state", *(spread(rec.steady(n)) for n in streams)])
    return table(headers, rows)


def ttft_table(bench: Bench) -> str:
    headers = ["TTFT s: median (min-max)", "cold", "follow-up", "cached/prompt", "failed"]
    rows = []
    for rec in bench.records.values():
        cached = [t.follow.cached_tokens for t in rec.ttfts if t.follow.cached_tokens is not None]
        prompt = rec.ttfts[0].prompt_tokens if rec.ttfts else 0
        rows.append([
            rec.name,
            spread(rec.cold(), 3),
            spread(rec.follow(), 3),
            f"{min(cached, default=0)}/{prompt}",
            f"{rec.failures()}/{rec.requests()}",
        ])  # fmt: skip
    return table(headers, rows)


@dataclass(frozen=True)
class Target:
    name: str
    value: float
    bound: float
    at_least: bool

    @property
    def met(self) -> bool | None:
        if math.isnan(self.value):
            return None
        return self.value >= self.bound if self.at_least else self.value <= self.bound


def targets(bench: Bench) -> list[Target]:
    h = bench.records["hearth"]
    one = h.agg(1)
    found = [
        Target("Hearth 1 stream / direct (Llama API)", paired(one, bench.direct_api), 0.97, True),
        Target("Hearth 4 streams / Hearth 1 stream", paired(h.agg(4), one), 1.8, True),
        Target("Hearth 8 streams / Hearth 1 stream", paired(h.agg(8), one), 2.15, True),
    ]
    ls = bench.records.get("llama-server")
    if ls is not None:
        found += [
            Target("Hearth / llama-server, 4 streams", paired(h.agg(4), ls.agg(4)), 0.95, True),
            Target("Hearth / llama-server, 8 streams", paired(h.agg(8), ls.agg(8)), 0.95, True),
        ]
    found.append(Target("Hearth follow-up / cold TTFT", paired(h.follow(), h.cold()), 0.06, False))
    found.append(Target("failed requests (all servers)", float(bench.failures()), 0, False))
    return found


def ratio_table(bench: Bench) -> str:
    rows = []
    for t in targets(bench):
        verdict = {True: "met", False: "NOT MET", None: "n/a"}[t.met]
        digits = 0 if t.name.startswith("failed") else 3
        bound = f"{'>=' if t.at_least else '<='} {t.bound:g}"
        rows.append([t.name, fmt(t.value, digits), bound, verdict])
    return table(["target (median of per-round ratios)", "value", "needed", "verdict"], rows)


def reference_table(bench: Bench) -> str:
    h = bench.records["hearth"]
    rows = [["Hearth 1 stream / direct native loop", paired(h.agg(1), bench.direct_native)]]
    for rec in bench.records.values():
        for n in bench.args.streams[1:]:
            rows.append([f"{rec.name} {n} streams / 1 stream", paired(rec.agg(n), rec.agg(1))])
        rows.append([f"{rec.name} follow-up / cold TTFT", paired(rec.follow(), rec.cold())])
    ls = bench.records.get("llama-server")
    if ls is not None:
        rows.append(["Hearth / llama-server, 1 stream", paired(h.agg(1), ls.agg(1))])
        for n in bench.args.streams[1:]:
            e2e = paired(h.end_to_end(n), ls.end_to_end(n))
            rows.append([f"Hearth / llama-server, {n} streams, end to end", e2e])
            steady = paired(h.steady(n), ls.steady(n))
            rows.append([f"Hearth / llama-server, {n} streams, steady state", steady])
        rows.append(["Hearth / llama-server, cold TTFT", paired(h.cold(), ls.cold())])
    return table(["other ratios", "value"], [[name, fmt(v, 3)] for name, v in rows])


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{os.cpu_count()} CPUs, {cpu}; load average before the run {load}"


def report(bench: Bench, load_before: str) -> str:
    args = bench.args
    return "\n\n".join([
        f"model: {bench.model.name}; threads {args.threads}, {args.parallel} slots x "
        f"{args.ctx} ctx, flash-attn {args.flash_attn}, {args.max_tokens} tokens/stream, "
        f"{args.rounds} rounds",
        f"extra hearth serve args: {args.hearth_arg or 'none'}; "
        f"extra llama-server args: {args.llama_server_arg or 'none'}",
        f"machine: {load_before}",
        f"CPU taken by other processes during the measurements kept: median "
        f"{median_of(bench.noise):.1%}, max {max(bench.noise, default=0.0):.1%} "
        f"({bench.retries} noisy measurements repeated)",
        absolute_table(bench),
        ttft_table(bench),
        ratio_table(bench),
        reference_table(bench),
    ])  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--model", type=Path, help="GGUF to use (default: the synthetic 250M model)")
    p.add_argument("--llama-server", type=Path, help="llama.cpp's llama-server, to compare with")
    p.add_argument("--rounds", type=int, default=5, help="repetitions (default 5)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--parallel", type=int, default=8, help="slots on each server")
    p.add_argument("--ctx", type=int, default=2048, help="context per slot")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--prompt-tokens", type=int, default=1990, help="length of the TTFT prompt")
    p.add_argument(
        "--flash-attn",
        choices=["on", "off"],
        default="off",
        help="for all three; 'off' is what Hearth's 'auto' picks on a CPU-only machine "
        "(llama.cpp's own 'auto' picks 'on')",
    )
    p.add_argument(
        "--max-noise",
        type=float,
        default=0.05,
        help="repeat a measurement if other processes took more than this share of the CPU",
    )
    p.add_argument("--retries", type=int, default=3, help="repeats of a noisy measurement")
    p.add_argument("--log-dir", type=Path, default=CACHE_DIR / "logs", help="server logs")
    p.add_argument(
        "--hearth-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra argument for hearth serve (repeatable), e.g. --hearth-arg=--kv-unified",
    )
    p.add_argument(
        "--llama-server-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra argument for llama-server (repeatable)",
    )
    args = p.parse_args(argv)
    args.streams = [1, 4, 8]
    if args.parallel < max(args.streams):
        p.error(f"--parallel must be at least {max(args.streams)}")
    if args.prompt_tokens + 32 + TTFT_MAX_TOKENS > args.ctx:
        p.error("--prompt-tokens plus the follow-up tail must fit --ctx")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    load_before = machine()
    started = time.perf_counter()
    bench = run(args)
    print(report(bench, load_before))
    print(f"\nwall time {time.perf_counter() - started:.0f} s; server logs in {args.log_dir}")
    for rec in bench.records.values():
        for error in sorted(rec.errors()):
            print(f"{rec.name} error: {error}", file=sys.stderr)
    if bench.discarded_failures:
        print(
            f"{bench.discarded_failures} failed requests in repeated measurements", file=sys.stderr
        )
    return 1 if bench.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
