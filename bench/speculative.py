"""Speculative decoding benchmark: Hearth with and without drafts (and llama-server -md).

    nice -n 5 .venv/bin/python bench/speculative.py [--llama-server PATH]

Random weights say nothing about acceptance, so the models agree by construction
(gguf_synth.ensure_spec_models): a 32-block target whose blocks 2-31 write nothing, its
2-block draft sharing embedding, output matrix and first blocks (acceptance ~100%), the
same target with a little noise in the dead blocks (lower acceptance), and an unrelated
draft (drafts always rejected). Every server is started once; each round runs every
workload on every server back to back, and ratios are medians of per-round ratios.

- single stream: decode tok/s = (tokens - 1) / (last token time - first token time);
- 8 streams: sum(tokens - 1) / (last token of any - first token of any);
- greedy (temperature 0), EOS and non-printable tokens banned, max_tokens exact;
- acceptance: accepted / drafted tokens over the workload, from /hearth/v1/status.

Greedy output must be identical with and without speculation in every case: the run
fails (exit 1) otherwise, or when a request fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from engine import Server, free_port, machine, start_server
from gguf_synth import CACHE_DIR, SPEC_N_VOCAB, build_vocab, ensure_spec_models

ORDINARY = [f"request {i}: the model of the world is a stream of tokens and" for i in range(8)]
REPETITIVE = "alpha beta gamma delta epsilon zeta eta theta " * 24 + "alpha beta"


@dataclass
class Stream:
    text: str = ""
    times: list[float] = field(default_factory=list)
    error: str | None = None


@dataclass
class Case:
    """One server configuration: Hearth (argv after the model) or llama-server."""

    name: str
    model: str  # key of ensure_spec_models
    extra: list[str]
    llama_server: bool = False
    tps: dict[str, list[float]] = field(default_factory=dict)  # workload -> per round
    texts: dict[str, list[str]] = field(default_factory=dict)  # workload -> last texts
    acceptance: dict[str, float | None] = field(default_factory=dict)


async def stream(
    client: httpx.AsyncClient, url: str, prompt: str, n: int, bias: dict[str, float]
) -> Stream:
    body = {"prompt": prompt, "max_tokens": n, "temperature": 0.0, "stream": True,
            "logit_bias": bias}  # fmt: skip
    result = Stream()
    async with client.stream("POST", f"{url}/v1/completions", json=body) as response:
        if response.status_code != 200:
            result.error = f"HTTP {response.status_code}: {(await response.aread())[:200]!r}"
            return result
        async for line in response.aiter_lines():
            if not line.startswith("data:") or line.endswith("[DONE]"):
                continue
            event = json.loads(line[5:])
            for choice in event.get("choices") or []:
                if choice.get("text"):
                    result.times.append(time.perf_counter())
                    result.text += choice["text"]
    return result


async def run_load(url: str, prompts: list[str], n: int, bias: dict[str, float]) -> list[Stream]:
    async with httpx.AsyncClient(timeout=600) as client:
        return list(await asyncio.gather(*(stream(client, url, p, n, bias) for p in prompts)))


def rate(streams: list[Stream]) -> float:
    start = min(s.times[0] for s in streams)
    end = max(s.times[-1] for s in streams)
    return sum(len(s.times) - 1 for s in streams) / (end - start)


def spec_counts(url: str) -> tuple[int, int]:
    spec = httpx.get(f"{url}/hearth/v1/status", timeout=10).json().get("speculative") or {}
    return int(spec.get("draft_tokens", 0)), int(spec.get("accepted_tokens", 0))


def llama_server_spec_flags(binary: str, draft: Path, n_max: int) -> list[str]:
    """``-md`` and the draft length, spelled as this llama-server spells them."""
    done = subprocess.run([binary, "--help"], check=False, capture_output=True, text=True)
    text = done.stdout + done.stderr
    flags = ["-md", str(draft)]
    if "--spec-type" in text:
        flags += ["--spec-type", "draft-simple"]
    if "--spec-draft-n-max" in text:
        return [*flags, "--spec-draft-n-max", str(n_max)]
    return [*flags, "--draft-max", str(n_max)]


def cases(args: argparse.Namespace, models: dict[str, Path]) -> list[Case]:
    draft, unrelated = str(models["draft"]), str(models["unrelated"])
    found = [
        Case("plain", "target", ["--spec", "off"]),
        Case("draft", "target", ["--draft-model", draft]),
        Case("unrelated draft", "target", ["--draft-model", unrelated]),
        Case("ngram", "target", ["--spec", "ngram"]),
        Case("noisy plain", "noisy", ["--spec", "off"]),
        Case("noisy draft", "noisy", ["--draft-model", draft]),
    ]
    if args.llama_server:
        found.append(Case("llama-server", "target", [], llama_server=True))
        for n_max in (8, 16):
            flags = llama_server_spec_flags(args.llama_server, models["draft"], n_max)
            found.append(Case(f"llama-server -md n={n_max}", "target", flags, llama_server=True))
    return found


def argv(args: argparse.Namespace, case: Case, model: Path, port: int) -> list[str]:
    if case.llama_server:
        return [args.llama_server, "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
                "-np", "8", "-c", str(8 * args.ctx), "-t", str(args.threads),
                "-tb", str(args.threads), "-fa", "off", "--cont-batching", *case.extra]  # fmt: skip
    return [sys.executable, "-m", "hearth", "serve", "--model", str(model), "--port", str(port),
            "--parallel", "8", "--ctx", str(args.ctx), "--threads", str(args.threads),
            "--flash-attn", "off", *case.extra]  # fmt: skip


WORKLOADS = {  # name -> (prompts, which cases run it)
    "single": ([ORDINARY[0]], None),
    "repetitive": ([REPETITIVE], {"plain", "ngram", "draft"}),
    "8 streams": (ORDINARY, {"plain", "draft", "ngram", "llama-server"}),
}


def measure(
    args: argparse.Namespace, servers: list[tuple[Case, Server]], bias: dict[str, float]
) -> list[str]:
    failures = []
    for round_ in range(args.rounds):
        for workload, (prompts, only) in WORKLOADS.items():
            for case, server in servers:
                if only is not None and case.name not in only:
                    continue
                before = (0, 0) if case.llama_server else spec_counts(server.base_url)
                streams = asyncio.run(run_load(server.base_url, prompts, args.max_tokens, bias))
                bad = [s.error or f"{len(s.times)} tokens" for s in streams
                       if s.error or len(s.times) != args.max_tokens]  # fmt: skip
                if bad:
                    failures.append(f"{case.name} / {workload}: {bad[0]}")
                    continue
                case.tps.setdefault(workload, []).append(rate(streams))
                case.texts[workload] = [s.text for s in streams]
                if not case.llama_server:
                    after = spec_counts(server.base_url)
                    drafted, accepted = after[0] - before[0], after[1] - before[1]
                    case.acceptance[workload] = accepted / drafted if drafted else None
        print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    return failures


def median_ratio(a: Case, b: Case, workload: str) -> float:
    pairs = zip(a.tps.get(workload, []), b.tps.get(workload, []), strict=False)
    ratios = [x / y for x, y in pairs]
    return statistics.median(ratios) if ratios else float("nan")


def report(args: argparse.Namespace, all_cases: list[Case]) -> tuple[str, bool]:
    by = {c.name: c for c in all_cases}
    lines = [f"Machine: {machine()}", f"threads {args.threads}, {args.max_tokens} tokens, "
             f"{args.rounds} rounds, noise {args.noise}", "",
             "| server | workload | tok/s (median) | acceptance |",
             "|---|---|---|---|"]  # fmt: skip
    for case in all_cases:
        for workload, values in case.tps.items():
            acc = case.acceptance.get(workload)
            shown = "-" if acc is None else f"{acc:.2f}"
            tps = statistics.median(values)
            lines.append(f"| {case.name} | {workload} | {tps:.1f} | {shown} |")
    checks = [
        ("draft, acceptance ~100%: speculative / plain", "draft", "plain", "single", 1.6),
        ("noisy target: speculative / plain", "noisy draft", "noisy plain", "single", 1.25),
        ("unrelated draft (always rejected) / plain", "unrelated draft", "plain", "single", 0.97),
        ("n-gram / plain, ordinary output", "ngram", "plain", "single", 0.97),
        ("n-gram / plain, repetitive continuation", "ngram", "plain", "repetitive", None),
        ("draft / plain, repetitive continuation", "draft", "plain", "repetitive", None),
        ("8 streams: draft / plain", "draft", "plain", "8 streams", 0.97),
        ("8 streams: n-gram / plain", "ngram", "plain", "8 streams", 0.97),
        ("llama-server -md n=8 / llama-server", "llama-server -md n=8", "llama-server",
         "single", None),
        ("llama-server -md n=16 / llama-server", "llama-server -md n=16", "llama-server",
         "single", None),
        ("8 streams: Hearth plain / llama-server", "plain", "llama-server", "8 streams", None),
    ]  # fmt: skip
    lines += ["", "| ratio | value | target |", "|---|---|---|"]
    ok = True
    ratios: dict[str, float] = {}
    for label, a, b, workload, target in checks:
        if a not in by or b not in by:
            continue
        value = ratios[label] = median_ratio(by[a], by[b], workload)
        verdict = "" if target is None else (" met" if value >= target else " NOT met")
        wanted = "" if target is None else f">= {target}"
        lines.append(f"| {label} | {value:.2f} | {wanted}{verdict} |")
    best_ls = max((v for k, v in ratios.items() if k.startswith("llama-server -md")), default=None)
    if best_ls is not None:
        mine = ratios["draft, acceptance ~100%: speculative / plain"]
        verdict = "met" if mine >= best_ls else "NOT met"
        lines.append(
            f"| Hearth draft gain vs llama-server's best | {mine:.2f} vs {best_ls:.2f} "
            f"| {verdict} |"
        )
    lines += ["", "Greedy output identical with and without speculation:"]
    pairs = (("plain", ["draft", "unrelated draft", "ngram"]), ("noisy plain", ["noisy draft"]))
    for reference, others in pairs:
        for other in others:
            for workload, texts in by[other].texts.items():
                same = texts == by[reference].texts.get(workload)
                ok &= same
                verdict = "identical" if same else "DIFFERENT"
                lines.append(f"- {other} vs {reference}, {workload}: {verdict}")
    return "\n".join(lines), ok


def parse_args(argv_: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llama-server", default=None, help="llama-server binary to compare with")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ctx", type=int, default=1024, help="context per slot")
    parser.add_argument(
        "--noise",
        type=float,
        default=0.008,
        help="scale of the noisy target's dead blocks (sets its acceptance)",
    )
    parser.add_argument("--log-dir", type=Path, default=CACHE_DIR / "logs")
    return parser.parse_args(argv_)


def main(argv_: list[str] | None = None) -> int:
    args = parse_args(argv_)
    models = ensure_spec_models(args.noise)
    vocab = build_vocab(SPEC_N_VOCAB)
    bias = {str(i): -100.0 for i, kind in enumerate(vocab.types) if kind != 1}  # normal only
    args.log_dir.mkdir(parents=True, exist_ok=True)
    all_cases = cases(args, models)
    servers: list[tuple[Case, Server]] = []
    try:
        for case in all_cases:
            port = free_port()
            name = "spec-" + case.name.replace(" ", "-").replace("=", "")
            servers.append((case, start_server(name, argv(args, case, models[case.model], port),
                                               port, args.log_dir)))  # fmt: skip
        failures = measure(args, servers, bias)
    finally:
        for _, server in servers:
            server.stop()
    text, identical = report(args, all_cases)
    print(text)
    for failure in failures:
        print(f"FAILED: {failure}")
    return 0 if identical and not failures else 1


if __name__ == "__main__":
    sys.exit(main())
