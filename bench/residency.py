"""Continue's pattern: a chat model with a long system prompt and a completion model,
used in turn on one `hearth serve` (issue 22's first target).

    cd bench && ../.venv/bin/python residency.py [--duration 300] [--rounds 4]

The chat model is Gemma 3 270M where it is on disk (``real_model.local_real_model``),
else the synthesized bench model; the completion model is the synthesized 250M bench
model. Both are imported into a throwaway library, and no server keeps a disk prompt
cache, so the numbers are the residency's alone.

1. With room for one model (``--max-models 1``, how Hearth worked before several could
   be loaded), ``--rounds`` chat turns and completions in turn: every switch reloads.
2. With the default residency: a warm-up (one chat turn, one completion: the two loads),
   then a cold prefill (a chat turn with another system prompt of the same length: the
   prefill without a load), then blocks for ``--duration`` seconds of interleaved
   traffic. Each block runs, in an order that rotates between blocks, K chat turns
   alone, K completions alone and K chat/completion pairs interleaved, all with
   distinct requests of the same shapes, so each model's latency interleaved is
   compared with the same model used alone on the same server, moments apart.

Targets: no load after the warm-up; the chat turn's TTFT after a completion at most 0.1x
its cold prefill's TTFT; each model's latency (send to last token) interleaved within
1.1x of the same model alone (medians of per-block ratios).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from engine import CpuMeter, Server, free_port, machine, paired, start_server
from multi_model import (
    Timed,
    chat_body,
    code_prompt,
    completion_body,
    filler,
    model_files,
    throwaway_library,
    timed,
)
from real_model_speed import eog_bias


@dataclass
class Traffic:
    """The two models' requests, each distinct (a new question; the code file one line
    longer) and of the same shape, as a user's would be."""

    args: argparse.Namespace
    chat: str
    fim: str
    bias: dict[str, dict[str, float]]
    system: str = ""
    asked: int = 0
    completed: int = 0

    def ask(self, url: str, system: str | None = None) -> Timed:
        self.asked += 1
        question = f"Question {self.asked}: what runs past?"
        body = chat_body(self.chat, system or self.system, question, self.args.max_tokens)
        return timed(url, "/v1/chat/completions", {**body, "logit_bias": self.bias["chat"]})

    def complete(self, url: str) -> Timed:
        self.completed += 1  # each completion's file one line longer than the last one's
        body = completion_body(self.fim, code_prompt(self.completed % 40), self.args.max_tokens)
        return timed(url, "/v1/completions", {**body, "logit_bias": self.bias["fim"]})


def serve(args: argparse.Namespace, extra: list[str], work: Path, name: str) -> Server:
    port = free_port()
    argv = [sys.executable, "-m", "hearth", "serve", "--port", str(port), "--ctx", "2048",
            "--parallel", "2", "--threads", str(args.threads), "--prompt-cache", "off",
            *extra]  # fmt: skip
    return start_server(name, argv, port, work)


def loads(url: str) -> int:
    return int(httpx.get(f"{url}/hearth/v1/status", timeout=10).json()["load_id"])


def one_model(args: argparse.Namespace, traffic: Traffic, work: Path) -> dict[str, float]:
    """Step 1: the chat and the completion in turn with room for one model."""
    server = serve(args, ["--max-models", "1"], work, "one-model")
    try:
        chats, completions = [], []
        for _ in range(args.rounds):
            chats.append(traffic.ask(server.base_url).ttft)
            completions.append(traffic.complete(server.base_url).ttft)
        return {"loads": loads(server.base_url), "requests": 2 * args.rounds,
                "chat_cold": chats[0], "chat_after": statistics.median(chats[1:]),
                "completion": statistics.median(completions[1:])}  # fmt: skip
    finally:
        server.stop()


@dataclass
class Blocks:
    """Step 2's measurements: per block, the medians of each kind of request."""

    chat_alone: list[float] = field(default_factory=list)
    fim_alone: list[float] = field(default_factory=list)
    chat_mixed: list[float] = field(default_factory=list)
    fim_mixed: list[float] = field(default_factory=list)
    chat_ttft_alone: list[float] = field(default_factory=list)
    chat_ttft_mixed: list[float] = field(default_factory=list)
    fim_ttft_alone: list[float] = field(default_factory=list)
    fim_ttft_mixed: list[float] = field(default_factory=list)
    chat_after_ttfts: list[float] = field(default_factory=list)  # every one, for the target
    mixed_seconds: float = 0.0
    requests: int = 0


def block(url: str, traffic: Traffic, k: int, order: int, out: Blocks) -> None:
    def alone_chat() -> None:
        got = [traffic.ask(url) for _ in range(k)]
        out.chat_alone.append(statistics.median(t.total for t in got))
        out.chat_ttft_alone.append(statistics.median(t.ttft for t in got))

    def alone_fim() -> None:
        got = [traffic.complete(url) for _ in range(k)]
        out.fim_alone.append(statistics.median(t.total for t in got))
        out.fim_ttft_alone.append(statistics.median(t.ttft for t in got))

    def mixed() -> None:
        started = time.perf_counter()
        chats, fims = [], []
        for _ in range(k):
            chats.append(traffic.ask(url))
            fims.append(traffic.complete(url))
        out.mixed_seconds += time.perf_counter() - started
        out.chat_after_ttfts += [t.ttft for t in chats[1:]]  # the first follows alone_*
        out.chat_mixed.append(statistics.median(t.total for t in chats))
        out.fim_mixed.append(statistics.median(t.total for t in fims))
        out.chat_ttft_mixed.append(statistics.median(t.ttft for t in chats))
        out.fim_ttft_mixed.append(statistics.median(t.ttft for t in fims))

    phases = [alone_chat, alone_fim, mixed]
    for phase in phases[order % 3 :] + phases[: order % 3]:
        phase()
    out.requests += 4 * k


def residency(args: argparse.Namespace, traffic: Traffic, work: Path) -> dict[str, object]:
    """Step 2: both models resident, interleaved for --duration seconds."""
    server = serve(args, [], work, "residency")
    url = server.base_url
    try:
        first_chat = traffic.ask(url).ttft
        traffic.complete(url)
        after_warm_up = loads(url)
        cold = traffic.ask(url, system=filler(args.system_words, seed=1)).ttft
        meter = CpuMeter()
        meter.pids = [server.process.pid]
        before = meter.snapshot()
        out = Blocks()
        while out.mixed_seconds < args.duration:
            block(url, traffic, args.block, len(out.chat_alone), out)
        other_cpu = meter.foreign(before, meter.snapshot())
        return {
            "first_chat": first_chat,
            "cold": cold,
            "blocks": out,
            "loads_after_warm_up": loads(url) - after_warm_up,
            "other_cpu": other_cpu,
        }
    finally:
        server.stop()


def report(args: argparse.Namespace, traffic: Traffic, single: dict[str, float],
           res: dict[str, object]) -> str:  # fmt: skip
    b: Blocks = res["blocks"]  # type: ignore[assignment]
    cold = float(res["cold"])  # type: ignore[arg-type]
    after = statistics.median(b.chat_after_ttfts)
    chat_ratio = paired(b.chat_mixed, b.chat_alone)
    fim_ratio = paired(b.fim_mixed, b.fim_alone)
    verdict = lambda ok: "met" if ok else "MISSED"  # noqa: E731

    def ms(values: list[float]) -> str:
        low, high = 1000 * min(values), 1000 * max(values)
        return f"{1000 * statistics.median(values):.0f} ({low:.0f}-{high:.0f})"

    lines = [
        f"chat model {traffic.chat}, completion model {traffic.fim}; {args.max_tokens} tokens a "
        f"request, system prompt {args.system_words} words; {machine()}",
        "",
        f"1. one model at a time (--max-models 1), {args.rounds} rounds: loads "
        f"{single['loads']:.0f}/{single['requests']:.0f} requests; chat TTFT cold "
        f"{single['chat_cold']:.3f} s, after a completion {single['chat_after']:.3f} s; "
        f"completion TTFT {single['completion']:.3f} s",
        "",
        f"2. default residency: {len(b.chat_alone)} blocks of {args.block}, "
        f"{b.mixed_seconds:.0f} s interleaved, {b.requests} requests after the warm-up; "
        f"other processes took {100 * float(res['other_cpu']):.1f}% of the CPU",  # type: ignore[arg-type]
        f"   first chat turn (load + prefill) TTFT {float(res['first_chat']):.3f} s; cold "  # type: ignore[arg-type]
        f"prefill (new system prompt, no load) TTFT {cold:.3f} s",
        "",
        "| ms, median of block medians (min-max) | alone | interleaved |",
        "|---|---|---|",
        f"| chat latency (to last token) | {ms(b.chat_alone)} | {ms(b.chat_mixed)} |",
        f"| chat TTFT | {ms(b.chat_ttft_alone)} | {ms(b.chat_ttft_mixed)} |",
        f"| completion latency | {ms(b.fim_alone)} | {ms(b.fim_mixed)} |",
        f"| completion TTFT | {ms(b.fim_ttft_alone)} | {ms(b.fim_ttft_mixed)} |",
        "",
        "| target | value | needed | verdict |",
        "|---|---|---|---|",
        f"| loads after the warm-up | {res['loads_after_warm_up']} | 0 | "
        f"{verdict(res['loads_after_warm_up'] == 0)} |",
        f"| chat TTFT after a completion / cold prefill TTFT | {after / cold:.3f} "
        f"({1000 * after:.0f} / {1000 * cold:.0f} ms) | <= 0.1 | {verdict(after / cold <= 0.1)} |",
        f"| chat latency interleaved / alone | {chat_ratio:.3f} | <= 1.1 | "
        f"{verdict(chat_ratio <= 1.1)} |",
        f"| completion latency interleaved / alone | {fim_ratio:.3f} | <= 1.1 | "
        f"{verdict(fim_ratio <= 1.1)} |",
        "",
        f"(TTFT interleaved / alone: chat {paired(b.chat_ttft_mixed, b.chat_ttft_alone):.3f}, "
        f"completion {paired(b.fim_ttft_mixed, b.fim_ttft_alone):.3f}; chat TTFT after a "
        f"completion / first turn with its load {after / float(res['first_chat']):.3f})",  # type: ignore[arg-type]
    ]  # fmt: skip
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--duration",
        type=float,
        default=300.0,
        help="seconds of interleaved traffic in step 2 (alone phases extra)",
    )
    parser.add_argument("--block", type=int, default=4, help="requests of a kind per phase")
    parser.add_argument("--rounds", type=int, default=4, help="step 1's rounds (0: skip it)")
    parser.add_argument("--system-words", type=int, default=900, help="~1k tokens")
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()  # fmt: skip
    chat_file, fim_file = model_files()
    with tempfile.TemporaryDirectory(prefix="hearth-bench-residency-") as tmp:
        work = Path(tmp)
        chat, fim = throwaway_library(work, [chat_file, fim_file])
        bias = {"chat": eog_bias(chat_file), "fim": eog_bias(fim_file)}
        traffic = Traffic(args, chat, fim, bias, system=filler(args.system_words))
        single = one_model(args, traffic, work) if args.rounds > 1 else {}
        res = residency(args, traffic, work)
    if not single:
        single = {"loads": float("nan"), "requests": 0, "chat_cold": float("nan"),
                  "chat_after": float("nan"), "completion": float("nan")}  # fmt: skip
    print(report(args, traffic, single, res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
