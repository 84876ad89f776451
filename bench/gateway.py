"""Gateway benchmark: what a remote engine behind Hearth costs, against asking it directly.

    .venv/bin/python bench/gateway.py [--model M.gguf] [--llama-server PATH] [--rounds 3]

The remote engine is a ``hearth serve`` with the model (or llama-server, with
``--llama-server``); the gateway is a ``hearth serve`` with no model of its own and the
remote registered as the engine ``remote`` (OpenAI kind), both on loopback. Each round
runs, back to back and alternating which goes first:

- one greedy stream of ``--tokens`` tokens, direct and through the gateway (single-stream
  tok/s, and its ratio);
- 8 concurrent streams, direct and through the gateway (aggregate tok/s, and its ratio);
- ``--ttft-requests`` short requests one after another, direct and through the gateway;
  the added TTFT is the median through the gateway minus the median direct.

The gateway's own cost is also reported as the CPU time (user + system) of its process
per streamed token, over the gateway side's 1- and 8-stream loads: on a shared machine
that number moves far less than a throughput ratio does.

Definitions are bench/engine.py's (decode tok/s of a stream excludes its first token;
aggregate tok/s of N streams spans the first to the last token of any stream; tokens are
counted from the usage the server reports, as a chunk may carry several). Ratios
and the added TTFT are medians of per-round values. Targets (issue 15): single-stream
ratio >= 0.98, added TTFT <= 5 ms, 8-stream ratio >= 0.97.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import llama_cpp
import psutil

from engine import (
    REQUEST_TIMEOUT_S,
    LoadResult,
    Server,
    StreamResult,
    eog_bias,
    free_port,
    prompt_text,
    start_server,
)
from gguf_synth import ensure_bench_model

ENGINE = "remote"
TTFT_TOKENS = 4


@dataclass
class Round:
    single: dict[str, float] = field(default_factory=dict)  # side -> tok/s
    multi: dict[str, float] = field(default_factory=dict)
    ttft_ms: dict[str, float] = field(default_factory=dict)  # side -> median TTFT
    cpu_s: dict[int, float] = field(default_factory=dict)  # streams -> gateway CPU seconds
    tokens: dict[int, int] = field(default_factory=dict)  # streams -> tokens it streamed


async def stream(
    client: httpx.AsyncClient, url: str, model: str, prompt: str, tokens: int, *,
    bias: dict[str, float],
) -> StreamResult:  # fmt: skip
    body = {
        "model": model,
        "prompt": prompt,
        "max_tokens": tokens,
        "temperature": 0.0,
        "stream": True,
        "logit_bias": bias,
        "stream_options": {"include_usage": True},
    }

    result = StreamResult(sent=time.perf_counter())
    try:
        async with client.stream("POST", f"{url}/v1/completions", json=body) as response:
            if response.status_code != 200:
                await response.aread()
                result.error = f"HTTP {response.status_code}: {response.text[:200]}"
                return result
            async for line in response.aiter_lines():
                if not line.startswith("data:") or line.endswith("[DONE]"):
                    continue
                event = json.loads(line[len("data:") :])
                if "error" in event:
                    result.error = str(event["error"])[:200]
                    return result
                if any(c.get("text") for c in event.get("choices") or ()):
                    result.token_times.append(time.perf_counter())
                if event.get("usage"):
                    result.n_tokens = int(event["usage"]["completion_tokens"])
    except httpx.HTTPError as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    if not result.error and result.n_tokens != tokens:
        result.error = f"got {result.n_tokens} tokens, wanted {tokens}"
    return result


async def load(url: str, model: str, prompts: list[str], tokens: int,
               bias: dict[str, float]) -> LoadResult:  # fmt: skip
    limits = httpx.Limits(max_connections=len(prompts) + 2)
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT_S, limits=limits) as client:
        runs = [stream(client, url, model, p, tokens, bias=bias) for p in prompts]
        return LoadResult(list(await asyncio.gather(*runs)))


async def ttfts(url: str, model: str, n: int, bias: dict[str, float], tag: str) -> list[float]:
    out = []
    for i in range(n):  # a new connection each: servers may close an idle kept-alive one
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT_S) as client:
            result = await stream(client, url, model, prompt_text(f"{tag}{i}", 12, i),
                                  TTFT_TOKENS, bias=bias)  # fmt: skip
            if result.error:
                raise RuntimeError(result.error)
            out.append(result.ttft * 1000.0)
    return out


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def measure_round(
    args: argparse.Namespace,
    sides: dict[str, tuple[str, str]],
    bias: dict[str, float],
    n: int,
    gateway: psutil.Process,
) -> Round:
    result = Round()
    order = list(sides) if n % 2 == 0 else list(reversed(sides))
    for side in order:
        url, model = sides[side]
        loads = {}
        for streams in (1, 8):
            prompts = [prompt_text(f"{streams}.{n}{side}{i}", 24, n + i) for i in range(streams)]
            before = cpu_seconds(gateway)
            loads[streams] = asyncio.run(load(url, model, prompts, args.tokens, bias))
            if side == "gateway":
                result.cpu_s[streams] = cpu_seconds(gateway) - before
                result.tokens[streams] = sum(s.n_tokens for s in loads[streams].streams)
        one, many = loads[1], loads[8]
        for runs in (one, many):
            if runs.failures:
                errors = {s.error for s in runs.streams if s.error}
                raise RuntimeError(f"{side}: {errors}")
        result.single[side], result.multi[side] = one.aggregate_tps, many.aggregate_tps
        ttft = asyncio.run(ttfts(url, model, args.ttft_requests, bias, f"t{n}{side}"))
        result.ttft_ms[side] = statistics.median(ttft)
    return result


def remote_argv(args: argparse.Namespace, model: Path, port: int) -> list[str]:
    if args.llama_server:
        return [str(args.llama_server), "-m", str(model), "--host", "127.0.0.1",
                "--port", str(port), "-np", "8", "-c", str(8 * args.ctx), "-t",
                str(args.threads), "-tb", str(args.threads), "--cont-batching"]  # fmt: skip
    return [sys.executable, "-m", "hearth", "serve", "--model", str(model), "--port",
            str(port), "--parallel", "8", "--ctx", str(args.ctx), "--threads",
            str(args.threads)]  # fmt: skip


def remote_model_id(remote: Server) -> str:
    models = httpx.get(f"{remote.base_url}/v1/models", timeout=10).json()["data"]
    loaded = [m for m in models if (m.get("meta") or {}).get("loaded", True)]
    return str(loaded[0]["id"])


def run(args: argparse.Namespace) -> tuple[list[Round], str]:
    from hearth.config.engines import EngineRegistry

    model = args.model or ensure_bench_model()
    vocab = llama_cpp.Llama(str(model), vocab_only=True, verbose=False)
    bias = eog_bias(vocab)
    with tempfile.TemporaryDirectory(prefix="hearth-gateway-bench-") as tmp:
        folder = Path(tmp)
        remote_port, gateway_port = free_port(), free_port()
        os.environ["HEARTH_CONFIG_DIR"] = str(folder / "remote")  # no engines of its own
        os.environ["HEARTH_DATA_DIR"] = str(folder / "remote-data")
        remote = start_server("remote", remote_argv(args, model, remote_port), remote_port,
                              folder)  # fmt: skip
        gateway: Server | None = None
        try:
            EngineRegistry(folder / "engines.json").add(ENGINE, remote.base_url)
            os.environ["HEARTH_CONFIG_DIR"] = str(folder)
            os.environ["HEARTH_DATA_DIR"] = str(folder / "data")
            gateway_argv = [sys.executable, "-m", "hearth", "serve", "--port",
                            str(gateway_port), "--threads", "1"]  # fmt: skip
            gateway = start_server("gateway", gateway_argv, gateway_port, folder)
            model_id = remote_model_id(remote)
            sides = {"direct": (remote.base_url, model_id),
                     "gateway": (gateway.base_url, f"{ENGINE}/{model_id}")}  # fmt: skip
            asyncio.run(load(remote.base_url, model_id, ["warm up"], 8, bias))
            asyncio.run(load(gateway.base_url, f"{ENGINE}/{model_id}", ["warm up"], 8, bias))
            rounds = []
            process = psutil.Process(gateway.process.pid)
            for n in range(args.rounds):
                rounds.append(measure_round(args, sides, bias, n, process))
                print(f"round {n + 1}/{args.rounds} done", file=sys.stderr, flush=True)
            kind = "llama-server" if args.llama_server else "hearth serve"
            return rounds, kind
        finally:
            if gateway is not None:
                gateway.stop()
            remote.stop()


def report(rounds: list[Round], kind: str, args: argparse.Namespace) -> str:
    def med(values: list[float]) -> float:
        return statistics.median(values)

    single = med([r.single["gateway"] / r.single["direct"] for r in rounds])
    multi = med([r.multi["gateway"] / r.multi["direct"] for r in rounds])
    added = med([r.ttft_ms["gateway"] - r.ttft_ms["direct"] for r in rounds])
    lines = [
        f"remote engine: {kind}; {args.rounds} rounds, {args.tokens} tokens per stream",
        "",
        "| measure | direct | through Hearth | gateway/direct | target |",
        "| --- | --- | --- | --- | --- |",
        f"| 1 stream, tok/s | {med([r.single['direct'] for r in rounds]):.1f} | "
        f"{med([r.single['gateway'] for r in rounds]):.1f} | {single:.3f} | >= 0.98 "
        f"{'ok' if single >= 0.98 else 'MISSED'} |",
        f"| 8 streams, aggregate tok/s | {med([r.multi['direct'] for r in rounds]):.1f} | "
        f"{med([r.multi['gateway'] for r in rounds]):.1f} | {multi:.3f} | >= 0.97 "
        f"{'ok' if multi >= 0.97 else 'MISSED'} |",
        f"| TTFT median, ms | {med([r.ttft_ms['direct'] for r in rounds]):.1f} | "
        f"{med([r.ttft_ms['gateway'] for r in rounds]):.1f} | {added:+.1f} ms | <= 5 ms "
        f"{'ok' if added <= 5.0 else 'MISSED'} |",
        "",
        f"gateway CPU (user + system) per streamed token: {cpu_per_token(rounds, 1):.0f} µs "
        f"(1 stream), {cpu_per_token(rounds, 8):.0f} µs (8 streams)",
    ]
    return "\n".join(lines)


def cpu_per_token(rounds: list[Round], streams: int) -> float:
    tokens = sum(r.tokens[streams] for r in rounds)
    return sum(r.cpu_s[streams] for r in rounds) * 1e6 / max(tokens, 1)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, help="a GGUF (default: the bench model)")
    parser.add_argument("--llama-server", type=Path, help="use llama-server as the remote")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=64, help="tokens per stream")
    parser.add_argument("--ttft-requests", type=int, default=15)
    parser.add_argument("--ctx", type=int, default=1024, help="context per slot")
    parser.add_argument("--threads", type=int, default=2)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rounds, kind = run(args)
    print(report(rounds, kind, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
