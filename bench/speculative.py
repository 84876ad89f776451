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
import signal
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
    client: httpx.AsyncClient, url: str, prompt: str, n: int, body_extra: dict[str, object]
) -> Stream:
    body = {"prompt": prompt, "max_tokens": n, "temperature": 0.0, "stream": True,
            **body_extra}  # fmt: skip
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


async def run_load(
    url: str, prompts: list[str], n: int, body_extra: dict[str, object]
) -> list[Stream]:
    async with httpx.AsyncClient(timeout=600) as client:
        return list(await asyncio.gather(*(stream(client, url, p, n, body_extra) for p in prompts)))


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
    found = [  # each Hearth server runs every workload with speculation on and off
        Case("draft", "target", ["--draft-model", draft]),
        Case("unrelated draft", "target", ["--draft-model", unrelated]),
        Case("ngram", "target", ["--spec", "ngram"]),
        Case("noisy draft", "noisy", ["--draft-model", draft]),
    ]
    if args.llama_server:
        found.append(Case("llama-server", "target", [], llama_server=True))
        for n_max in (8, 16):
            flags = llama_server_spec_flags(args.llama_server, models["draft"], n_max)
            found.append(Case(f"llama-server -md n={n_max}", "target", flags, llama_server=True))
    if args.only:
        wanted = {name.strip() for name in args.only.split(",")}
        unknown = wanted - {c.name for c in found}
        if unknown:
            raise SystemExit(f"--only: no case named {', '.join(sorted(unknown))}")
        found = [c for c in found if c.name in wanted]
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
    "repetitive": ([REPETITIVE], {"ngram", "draft"}),
    "8 streams": (ORDINARY, {"draft", "ngram", "llama-server"}),
}


def measure(
    args: argparse.Namespace, servers: list[tuple[Case, Server]], bias: dict[str, float]
) -> list[str]:
    """Every workload on every server; on Hearth's, speculation on and off back to back
    (order alternating by round), so both halves of a ratio see the same machine."""
    failures = []
    for round_ in range(args.rounds):
        for workload, (prompts, only) in WORKLOADS.items():
            if args.workloads and workload not in args.workloads.split(","):
                continue
            for case, server in servers:
                if only is not None and not any(case.name.startswith(o) for o in only):
                    continue
                modes = [None] if case.llama_server else [True, False]
                if round_ % 2:
                    modes.reverse()
                for mode in modes:
                    key = workload if mode is not False else f"{workload} off"
                    extra: dict[str, object] = {"logit_bias": bias}
                    if mode is not None:
                        extra["speculative"] = mode
                    failure = run_one(args, case, server, key, prompts=prompts, extra=extra)
                    if failure:
                        failures.append(failure)
        print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    return failures


def run_one(
    args: argparse.Namespace, case: Case, server: Server, key: str, *, prompts: list[str],
    extra: dict[str, object],
) -> str | None:  # fmt: skip
    before = (0, 0) if case.llama_server else spec_counts(server.base_url)
    streams = asyncio.run(run_load(server.base_url, prompts, args.max_tokens, extra))
    bad = [s.error or f"{len(s.times)} tokens" for s in streams
           if s.error or len(s.times) != args.max_tokens]  # fmt: skip
    if bad:
        return f"{case.name} / {key}: {bad[0]}"
    case.tps.setdefault(key, []).append(rate(streams))
    case.texts[key] = [s.text for s in streams]
    if not case.llama_server:
        after = spec_counts(server.base_url)
        drafted, accepted = after[0] - before[0], after[1] - before[1]
        case.acceptance[key] = accepted / drafted if drafted else None
    return None


def median_ratio(a: Case, a_key: str, b: Case, b_key: str) -> float:
    pairs = zip(a.tps.get(a_key, []), b.tps.get(b_key, []), strict=False)
    ratios = [x / y for x, y in pairs]
    return statistics.median(ratios) if ratios else float("nan")


CHECKS = [  # label, case, workload, target; "on / off" on the same server
    ("draft, acceptance ~100%: speculative / plain", "draft", "single", 1.6),
    ("noisy target: speculative / plain", "noisy draft", "single", 1.25),
    ("unrelated draft (always rejected) / plain", "unrelated draft", "single", 0.97),
    ("n-gram / plain, ordinary output", "ngram", "single", 0.97),
    ("n-gram / plain, repetitive continuation", "ngram", "repetitive", None),
    ("draft / plain, repetitive continuation", "draft", "repetitive", None),
    ("8 streams: draft / plain", "draft", "8 streams", 0.97),
    ("8 streams: n-gram / plain", "ngram", "8 streams", 0.97),
]


def llama_server_rows(by: dict[str, Case], ours: float | None) -> list[str]:
    """Hearth's draft model against llama-server's ``-md``: gains over each one's plain
    server, and Hearth's speculative tok/s over llama-server's in the same round (the
    absolute reading, which does not move with either plain side's noise)."""
    lines: list[str] = []
    plain, draft = by.get("llama-server"), by.get("draft")
    best = 0.0
    for n_max in (8, 16):
        md = by.get(f"llama-server -md n={n_max}")
        if md is None or "single" not in md.tps:
            continue
        if draft is not None and "single" in draft.tps:
            value = median_ratio(draft, "single", md, "single")
            lines.append(f"| Hearth draft / {md.name}, single, tok/s | {value:.2f} | >= 1 |")
        if plain is not None and "single" in plain.tps:
            value = median_ratio(md, "single", plain, "single")
            best = max(best, value)
            lines.append(f"| {md.name} / llama-server, single | {value:.2f} | |")
    if best and ours is not None:
        verdict = "met" if ours >= best else "NOT met"
        lines.append(f"| Hearth's draft gain vs llama-server's best | {ours:.2f} vs {best:.2f} "
                     f"| {verdict} |")  # fmt: skip
    if plain is not None and draft is not None and "single off" in draft.tps:
        value = median_ratio(draft, "single off", plain, "single")
        lines.append(f"| Hearth plain / llama-server plain, single | {value:.2f} | |")
    return lines


def report(args: argparse.Namespace, all_cases: list[Case]) -> tuple[str, bool]:
    by = {c.name: c for c in all_cases}
    lines = [f"Machine: {machine()}", f"threads {args.threads}, {args.max_tokens} tokens, "
             f"{args.rounds} rounds, noise {args.noise}", "",
             "| server | workload | tok/s (median) | per round | acceptance |",
             "|---|---|---|---|---|"]  # fmt: skip
    for case in all_cases:
        for key, values in case.tps.items():
            acc = case.acceptance.get(key)
            shown = "-" if acc is None else f"{acc:.2f}"
            tps = statistics.median(values)
            rounds = " ".join(f"{v:.0f}" for v in values)
            lines.append(f"| {case.name} | {key} | {tps:.1f} | {rounds} | {shown} |")
    lines += ["", "| ratio (median of per-round ratios) | value | target |", "|---|---|---|"]
    ratios: dict[str, float] = {}
    for label, name, workload, target in CHECKS:
        checked = by.get(name)
        if checked is None or workload not in checked.tps:
            continue
        value = ratios[label] = median_ratio(checked, workload, checked, f"{workload} off")
        verdict = "" if target is None else (" met" if value >= target else " NOT met")
        wanted = "" if target is None else f">= {target}"
        lines.append(f"| {label} | {value:.2f} | {wanted}{verdict} |")
    lines += llama_server_rows(by, ratios.get("draft, acceptance ~100%: speculative / plain"))
    ok = True
    lines += ["", "Greedy output identical with and without speculation:"]
    for case in all_cases:
        if case.llama_server:
            continue
        for key, texts in case.texts.items():
            if key.endswith(" off"):
                continue
            same = texts == case.texts.get(f"{key} off")
            ok &= same
            lines.append(f"- {case.name}, {key}: {'identical' if same else 'DIFFERENT'}")
    lines += llama_server_identity(all_cases)
    return "\n".join(lines), ok


def llama_server_identity(all_cases: list[Case]) -> list[str]:
    """For reference (not a Hearth target): whether llama-server's own -md output equals
    its plain output, and Hearth's plain output llama-server's, on the same workloads.
    A near tie flipped by batched verification shows up here too if it is llama.cpp's."""
    plain = next((c for c in all_cases if c.name == "llama-server"), None)
    hearth = next((c for c in all_cases if c.name == "draft"), None)
    lines = ["", "For reference, against llama-server's greedy output:"]
    for case in all_cases:
        if not case.llama_server or case is plain:
            continue
        for key, texts in case.texts.items():
            if plain is not None and key in plain.texts:
                same = texts == plain.texts[key]
                verdict = "identical" if same else "DIFFERENT"
                lines.append(f"- {case.name} vs llama-server plain, {key}: {verdict}")
            if hearth is not None and key in hearth.texts:
                same = texts == hearth.texts[key]
                verdict = "identical" if same else "DIFFERENT"
                lines.append(f"- {case.name} vs Hearth with the draft, {key}: {verdict}")
    if plain is not None and hearth is not None:
        for key, texts in plain.texts.items():
            same = texts == hearth.texts.get(f"{key} off")
            verdict = "identical" if same else "DIFFERENT"
            lines.append(f"- Hearth plain vs llama-server plain, {key}: {verdict}")
    return lines if len(lines) > 2 else []


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
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated case names (e.g. 'draft,llama-server -md n=16'); default: all",
    )
    parser.add_argument(
        "--workloads", default="", help="comma-separated workloads (single,repetitive,8 streams)"
    )
    parser.add_argument("--log-dir", type=Path, default=CACHE_DIR / "logs")
    return parser.parse_args(argv_)


def main(argv_: list[str] | None = None) -> int:
    args = parse_args(argv_)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # still stop the servers
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
