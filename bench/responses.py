"""Responses benchmark: a conversation continued by ``previous_response_id`` hits the cache.

One run prints one table. Run it from the repository root with the project's venv:

    nice -n 5 .venv/bin/python bench/responses.py [--model M.gguf] [--rounds 5]

Each round, on one ``hearth serve`` (the synthetic 250M model of ``bench/engine.py``):

1. turn 1: ``POST /v1/responses`` (stored) with instructions that start with a unique
   tag (so nothing is shared with earlier rounds) and a long user message (about
   2,000 tokens), 32 greedy output tokens;
2. follow-up by id: ``previous_response_id`` and a short new user message, streamed;
3. follow-up sent whole: the same conversation as items, ``store: false`` (how Codex CLI
   sends it), streamed;
4. a chat turn, for comparison: the same two turns through ``/v1/chat/completions``
   (turn 1 with a new tag, then its follow-up with the reply in ``messages``), streamed;
5. cold: the Responses conversation sent whole, with a new tag of the same length in the
   instructions (so no slot has any of it cached), streamed.

The model's reply comes back as text. A random model's tokens are almost never the
canonical tokenization of their text, so tokenized again, the follow-up would differ
from what the slot holds from the first token of the reply on. The engine reuses turn
1's ids instead (engine/token_reuse.py): the follow-ups (steps 2 and 4) evaluate only the
new turn. Step 3 comes after step 2 and repeats its prompt, so everything is cached.

TTFT is from sending the request to the first non-empty ``response.output_text.delta``.
"evaluated" is input less cached tokens: what the follow-up really computed, a count the
machine's load does not change. Steps 2 and 3 must report the same ``input_tokens`` (the
same rendered conversation, the same reused ids); the cold one is tokenized from text,
so its reply part may split differently, by at most turn 1's 32 output tokens. The run
fails (exit 1) otherwise, or on any error. Ratios are medians of per-round ratios, so
slow phases of a shared machine hit both sides alike. The target (issue 12): follow-up
by id / cold TTFT <= 0.06, as for chat turns.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from engine import Server, free_port, prompt_text, start_server
from gguf_synth import CACHE_DIR, ensure_bench_model

REQUEST_TIMEOUT_S = 300.0
TARGET = 0.06
TAIL = "Now answer in one line: what comes next?"
TURN1_OUTPUT = 32


@dataclass
class Streamed:
    """One streamed response: when its first text came, and its final usage."""

    ttft: float = float("nan")
    input_tokens: int = 0
    cached_tokens: int = 0
    response_id: str = ""
    error: str | None = None

    @property
    def evaluated(self) -> int:
        """Prompt tokens computed, not read from the cache."""
        return self.input_tokens - self.cached_tokens


@dataclass
class Round:
    turn1_input: int
    by_id: Streamed
    whole: Streamed
    chat: Streamed
    cold: Streamed

    @property
    def failures(self) -> list[str]:
        out = [f"{name}: {s.error}" for name, s in self.streams() if s.error]
        by_id, whole, cold = (s.input_tokens for s in (self.by_id, self.whole, self.cold))
        if not out and (by_id != whole or abs(cold - by_id) > TURN1_OUTPUT):  # one conversation
            out.append(f"the conversation rendered differently: input_tokens {by_id}, {whole}, "
                       f"cold {cold}")  # fmt: skip
        return out

    def streams(self) -> list[tuple[str, Streamed]]:
        return [("by id", self.by_id), ("whole", self.whole), ("chat", self.chat),
                ("cold", self.cold)]  # fmt: skip


def stream_response(client: httpx.Client, url: str, body: dict[str, Any]) -> Streamed:
    """A streamed ``/v1/responses`` request, or ``/v1/chat/completions`` for a body with
    ``messages``."""
    if "messages" in body:
        return _stream_chat(client, url, body)
    result = Streamed()
    sent = time.perf_counter()
    try:
        with client.stream("POST", f"{url}/v1/responses", json={**body, "stream": True}) as r:
            if r.status_code != 200:
                r.read()
                result.error = f"HTTP {r.status_code}: {r.text[:200]}"
                return result
            for line in r.iter_lines():
                if not line.startswith("data:"):
                    continue
                event = json.loads(line[len("data:") :])
                kind = event.get("type")
                if kind == "response.output_text.delta" and event.get("delta"):
                    if result.ttft != result.ttft:  # still NaN: the first text
                        result.ttft = time.perf_counter() - sent
                elif kind in ("response.completed", "response.incomplete"):
                    response = event["response"]
                    usage = response["usage"]
                    result.response_id = response["id"]
                    result.input_tokens = usage["input_tokens"]
                    result.cached_tokens = usage["input_tokens_details"]["cached_tokens"]
                elif kind in ("response.failed", "error"):
                    result.error = str(event)[:200]
    except httpx.HTTPError as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    if result.error is None and result.ttft != result.ttft:
        result.error = "no text was streamed"
    return result


def _stream_chat(client: httpx.Client, url: str, body: dict[str, Any]) -> Streamed:
    result = Streamed()
    sent = time.perf_counter()
    body = {**body, "stream": True, "stream_options": {"include_usage": True}}
    try:
        with client.stream("POST", f"{url}/v1/chat/completions", json=body) as r:
            if r.status_code != 200:
                r.read()
                result.error = f"HTTP {r.status_code}: {r.text[:200]}"
                return result
            for line in r.iter_lines():
                if not line.startswith("data:") or line.endswith("[DONE]"):
                    continue
                event = json.loads(line[len("data:") :])
                text = "".join((c.get("delta") or {}).get("content") or ""
                               for c in event.get("choices") or [])  # fmt: skip
                if text and result.ttft != result.ttft:
                    result.ttft = time.perf_counter() - sent
                if event.get("usage"):
                    usage = event["usage"]
                    result.input_tokens = usage["prompt_tokens"]
                    result.cached_tokens = usage["prompt_tokens_details"]["cached_tokens"]
    except httpx.HTTPError as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    if result.error is None and result.ttft != result.ttft:
        result.error = "no text was streamed"
    return result


def chat_turn(url: str, rules: str, question: str) -> Streamed:
    """The chat-completions way: turn 1, then the follow-up with its reply sent back."""
    turn1 = [{"role": "system", "content": rules}, {"role": "user", "content": question}]
    with httpx.Client(timeout=REQUEST_TIMEOUT_S) as client:
        first = client.post(
            f"{url}/v1/chat/completions",
            json={"messages": turn1, "temperature": 0, "max_tokens": 32},
        )
    if first.status_code != 200:
        return Streamed(error=f"chat turn 1: HTTP {first.status_code}: {first.text[:200]}")
    reply = first.json()["choices"][0]["message"]["content"] or ""
    messages = [*turn1, {"role": "assistant", "content": reply}, {"role": "user", "content": TAIL}]
    with httpx.Client(timeout=REQUEST_TIMEOUT_S) as client:
        return stream_response(
            client, url, {"messages": messages, "temperature": 0, "max_tokens": 8}
        )


def run_round(url: str, words: int, round_no: int) -> Round:
    def instructions() -> str:  # digits only: every tag is the same number of tokens
        tag = f"{secrets.randbelow(10**12):012d}"
        return f"[{tag}] You are a helpful assistant. Answer in one line."

    rules = instructions()
    question = prompt_text(f"round {round_no}", words, seed=round_no + 1)
    common = {"temperature": 0, "max_output_tokens": 8}
    # A new connection per request, as an agent's separate turns may come.
    with httpx.Client(timeout=REQUEST_TIMEOUT_S) as client:
        first = client.post(
            f"{url}/v1/responses",
            json={"instructions": rules, "input": question, "temperature": 0,
                  "max_output_tokens": TURN1_OUTPUT},
        )  # fmt: skip
    if first.status_code != 200:
        raise RuntimeError(f"turn 1: HTTP {first.status_code}: {first.text[:300]}")
    made = first.json()
    reply = "".join(
        part["text"]
        for item in made["output"] if item["type"] == "message"
        for part in item["content"]
    )  # fmt: skip
    conversation = [
        {"role": "user", "content": question},
        {"role": "assistant", "content": reply},
        {"role": "user", "content": TAIL},
    ]
    with httpx.Client(timeout=REQUEST_TIMEOUT_S) as client:
        by_id = stream_response(
            client, url,
            {**common, "instructions": rules, "previous_response_id": made["id"], "input": TAIL},
        )  # fmt: skip
    with httpx.Client(timeout=REQUEST_TIMEOUT_S) as client:
        whole = stream_response(
            client, url, {**common, "instructions": rules, "input": conversation, "store": False}
        )
    chat = chat_turn(url, instructions(), question)
    with httpx.Client(timeout=REQUEST_TIMEOUT_S) as client:
        cold = stream_response(
            client, url,
            {**common, "instructions": instructions(), "input": conversation, "store": False},
        )  # fmt: skip
    return Round(made["usage"]["input_tokens"], by_id, whole, chat, cold)


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def report(args: argparse.Namespace, model: Path, rounds: list[Round], wall: float) -> bool:
    failures = [f"round {n}: {f}" for n, r in enumerate(rounds, 1) for f in r.failures]
    ok = [r for r in rounds if not r.failures]
    print(f"model: {model.name}; threads {args.threads}, {args.parallel} slots x {args.ctx} "
          f"ctx; {args.rounds} rounds")  # fmt: skip
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    cpu = platform.processor() or platform.machine()
    print(f"machine: {os.cpu_count()} CPUs, {cpu}; load average before the run {args.load}")
    print(f"load average after the run {load}\n")
    if ok:
        turn1 = statistics.median(r.turn1_input for r in ok)
        print(f"turn 1: {turn1:.0f} input tokens + {TURN1_OUTPUT} output; follow-up: "
              f"{ok[0].by_id.input_tokens} input tokens\n")  # fmt: skip
        print(f"| {'TTFT s: median (min-max)':<31} | {'TTFT':<22} | cached/input | evaluated |")
        print(f"|{'-' * 33}|{'-' * 24}|--------------|-----------|")
        for name, label in (("by_id", "follow-up, previous_response_id"),
                            ("whole", "follow-up, whole, all cached"),
                            ("chat", "chat turn follow-up"),
                            ("cold", "cold, same conversation")):  # fmt: skip
            streams = [getattr(r, name) for r in ok]
            cached = statistics.median(s.cached_tokens for s in streams)
            size = streams[0].input_tokens
            evaluated = statistics.median(s.evaluated for s in streams)
            print(f"| {label:<31} | {_spread([s.ttft for s in streams]):<22} | "
                  f"{f'{cached:.0f}/{size}':<12} | {evaluated:>9.0f} |")  # fmt: skip
        ratio = statistics.median(r.by_id.ttft / r.cold.ttft for r in ok)
        whole = statistics.median(r.whole.ttft / r.cold.ttft for r in ok)
        chat = statistics.median(r.chat.ttft / r.cold.ttft for r in ok)
        parity = statistics.median(r.by_id.ttft / r.chat.ttft for r in ok)
        verdict = "met" if ratio <= TARGET and not failures else "NOT met"
        print("\n| target (median of per-round ratios)        | value | needed  | verdict |")
        print("|--------------------------------------------|-------|---------|---------|")
        print(f"| follow-up by previous_response_id / cold   | {ratio:.3f} | <= {TARGET} | "
              f"{verdict:<7} |")  # fmt: skip
        print(f"| (follow-up sent whole / cold, for context) | {whole:.3f} |         |         |")
        print(f"| (chat turn follow-up / cold)               | {chat:.3f} |         |         |")
        print(f"| (follow-up by id / chat turn follow-up)    | {parity:.3f} |         |         |")
    for failure in failures:
        print(f"FAILED {failure}")
    print(f"\nwall time {wall:.0f} s; server log in {args.log_dir}")
    return not failures


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--model", type=Path, help="GGUF to use (default: the synthetic 250M model)")
    p.add_argument("--rounds", type=int, default=5, help="repetitions (default 5)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--parallel", type=int, default=4, help="slots")
    p.add_argument("--ctx", type=int, default=4096, help="context per slot")
    p.add_argument("--words", type=int, default=1000, help="filler words in turn 1's message")
    p.add_argument("--log-dir", type=Path, default=CACHE_DIR / "logs", help="server log")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    model = args.model or ensure_bench_model()
    args.log_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    argv_ = [
        sys.executable, "-m", "hearth", "serve", "--model", str(model), "--port", str(port),
        "--parallel", str(args.parallel), "--ctx", str(args.ctx), "--threads", str(args.threads),
    ]  # fmt: skip
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hearth-bench-responses-") as data:
        # Its own data folder: the stored responses do not land in the user's.
        os.environ["HEARTH_DATA_DIR"] = str(Path(data) / "data")
        os.environ["HEARTH_CONFIG_DIR"] = str(Path(data) / "config")
        server: Server = start_server("hearth-responses", argv_, port, args.log_dir)
        rounds: list[Round] = []
        try:
            for n in range(1, args.rounds + 1):
                done = run_round(server.base_url, args.words, n)
                rounds.append(done)
                print(f"  round {n}:", ", ".join(
                    f"{name} TTFT {s.ttft:.3f} s ({s.cached_tokens}/{s.input_tokens} cached, "
                    f"{s.evaluated} evaluated)"
                    for name, s in done.streams()), flush=True)  # fmt: skip
        finally:
            server.stop()
    print()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    print(f"hearth at commit {commit or 'unknown'}")
    return 0 if report(args, model, rounds, time.perf_counter() - started) else 1


if __name__ == "__main__":
    sys.exit(main())
