"""Dialect benchmark: does streaming through each wire format cost more than OpenAI chat?

    .venv/bin/python bench/dialects.py [--model M.gguf] [--rounds 5] [--tokens 128]

One ``hearth serve`` with one model (the 250M-shape bench model with FIM tokens, made
and cached on first use, about a minute). Each round sends one greedy streamed request
per dialect, one after another, in a rotated order: OpenAI chat, Ollama ``/api/chat``,
Anthropic ``/v1/messages``, OpenAI Responses, and for code completion ``/infill`` with
its OpenAI twin ``/v1/completions`` + ``suffix`` (the same FIM prompt). Every request has
a prompt of its own (a unique tag first), so none is served from the prefix cache, and
the chat prompts have the same length in every dialect.

Per stream: TTFT (request sent to the first non-empty text) and decode tok/s
(``(tokens - 1) / (last text - first text)``; the model never ends early, its end tokens'
output rows are zero, so every stream has exactly ``--tokens`` tokens). Ratios are
medians of per-round ratios against OpenAI chat (``/infill`` also against completions).
Targets (issue 12): tok/s ratio >= 0.98, TTFT within 2 ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from engine import free_port, prompt_text, start_server
from gguf_synth import CACHE_DIR, SPEC, build_vocab, gf  # it puts tests/ on the path

MODEL_VERSION = 1
TARGET_RATIO = 0.98
TARGET_TTFT_MS = 2.0
CHAT_WORDS = 60
TIMEOUT_S = 300.0


def ensure_fim_model(cache_dir: Path = CACHE_DIR) -> Path:
    """The bench model's shape and pieces, plus ChatML and FIM controls, Q4_K_M."""
    dst = cache_dir / f"hearth-bench-250m-fim-v{MODEL_VERSION}-Q4_K_M.gguf"
    if dst.exists():
        return dst
    cache_dir.mkdir(parents=True, exist_ok=True)
    plain = build_vocab()
    controls = [gf.IM_START, gf.IM_END, gf.FIM_PRE, gf.FIM_SUF, gf.FIM_MID]
    pieces = plain.tokens[gf.BYTE_BASE_ID + 256 + 2 :]
    vocab = gf.make_vocab(controls, pieces, len(plain.tokens))
    f16 = dst.with_suffix(".f16.tmp")
    partial = dst.with_suffix(".partial")
    try:
        gf.write_llama(f16, SPEC, vocab, name="Hearth Bench 250M FIM", fim=True,
                       quiet_rows=gf.non_normal_rows(vocab))  # fmt: skip
        gf.quantize(f16, partial, "Q4_K_M")
        partial.replace(dst)
    finally:
        f16.unlink(missing_ok=True)
        partial.unlink(missing_ok=True)
    return dst


# --------------------------------------------------------------------------- dialects


@dataclass(frozen=True)
class Dialect:
    name: str
    path: str
    body: Callable[[str, str, int], dict[str, Any]]  # (model, prompt, tokens) -> body
    texts: Callable[[Iterator[str]], Iterator[str]]  # response lines -> text deltas


def _messages(prompt: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": prompt}]


def _sse(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if line.startswith("data: ") and line != "data: [DONE]":
            yield json.loads(line[len("data: ") :])


def _openai_chat(lines: Iterator[str]) -> Iterator[str]:
    for event in _sse(lines):
        for choice in event.get("choices", []):
            yield choice.get("delta", {}).get("content") or ""


def _openai_text(lines: Iterator[str]) -> Iterator[str]:
    for event in _sse(lines):
        for choice in event.get("choices", []):
            yield choice.get("text") or ""


def _ollama(lines: Iterator[str]) -> Iterator[str]:
    for line in lines:
        if line.strip():
            yield json.loads(line).get("message", {}).get("content") or ""


def _anthropic(lines: Iterator[str]) -> Iterator[str]:
    for event in _sse(lines):
        if event.get("type") == "content_block_delta":
            yield event["delta"].get("text") or ""


def _responses(lines: Iterator[str]) -> Iterator[str]:
    for event in _sse(lines):
        if event.get("type") == "response.output_text.delta":
            yield event.get("delta") or ""


def _infill(lines: Iterator[str]) -> Iterator[str]:
    for event in _sse(lines):
        if "error" in event:
            raise RuntimeError(event["error"])
        yield event.get("content") or ""


DIALECTS = [
    Dialect("openai-chat", "/v1/chat/completions", lambda m, p, n: {
        "model": m, "messages": _messages(p), "max_tokens": n, "temperature": 0,
        "stream": True}, _openai_chat),
    Dialect("ollama", "/api/chat", lambda m, p, n: {
        "model": m, "messages": _messages(p), "stream": True,
        "options": {"temperature": 0, "num_predict": n}}, _ollama),
    Dialect("anthropic", "/v1/messages", lambda m, p, n: {
        "model": m, "messages": _messages(p), "max_tokens": n, "temperature": 0,
        "stream": True}, _anthropic),
    Dialect("responses", "/v1/responses", lambda m, p, n: {
        "model": m, "input": p, "max_output_tokens": n, "temperature": 0, "stream": True,
        "store": False}, _responses),
    Dialect("completions+suffix", "/v1/completions", lambda m, p, n: {
        "model": m, "prompt": p, "suffix": "\n", "max_tokens": n, "temperature": 0,
        "stream": True}, _openai_text),
    Dialect("infill", "/infill", lambda m, p, n: {
        "model": m, "input_prefix": p, "input_suffix": "\n", "n_predict": n,
        "temperature": 0, "stream": True}, _infill),
]  # fmt: skip
BASELINE = {"infill": "completions+suffix"}  # its like-for-like twin; the rest: chat


@dataclass
class Stream:
    ttft_ms: float
    tps: float


def run_stream(client: httpx.Client, url: str, dialect: Dialect, prompt: str, tokens: int, *,
               model: str) -> Stream:  # fmt: skip
    sent = time.perf_counter()
    first = last = 0.0
    chars = 0
    body = dialect.body(model, prompt, tokens)
    with client.stream("POST", url + dialect.path, json=body, timeout=TIMEOUT_S) as response:
        if response.status_code != 200:
            response.read()
            raise RuntimeError(f"{dialect.name}: {response.status_code} {response.text[:300]}")
        for text in dialect.texts(response.iter_lines()):
            if text:
                now = time.perf_counter()
                first = first or now
                last = now
                chars += len(text)
    if not chars or last <= first:
        raise RuntimeError(f"{dialect.name}: the stream had no text")
    return Stream((first - sent) * 1000, (tokens - 1) / (last - first))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    model_path = args.model or ensure_fim_model()
    port = free_port()
    argv = [sys.executable, "-m", "hearth", "serve", "--model", str(model_path),
            "--port", str(port), "--ctx", "2048", "--parallel", "4",
            "--threads", str(args.threads)]  # fmt: skip
    results: dict[str, list[Stream]] = {d.name: [] for d in DIALECTS}
    with tempfile.TemporaryDirectory() as logs:
        server = start_server("hearth", argv, port, Path(logs))
        try:
            with httpx.Client() as client:
                model = client.get(server.base_url + "/v1/models").json()["data"][0]["id"]
                warm = DIALECTS[0]
                run_stream(client, server.base_url, warm, "warm up", 8, model=model)
                for round_no in range(args.rounds):
                    shift = round_no % len(DIALECTS)
                    for i, dialect in enumerate(DIALECTS[shift:] + DIALECTS[:shift]):
                        prompt = prompt_text(f"r{round_no}-{i}", CHAT_WORDS, seed=round_no)
                        stream = run_stream(client, server.base_url, dialect, prompt,
                                            args.tokens, model=model)  # fmt: skip
                        results[dialect.name].append(stream)
                    print(f"round {round_no + 1}/{args.rounds} done", file=sys.stderr)
        finally:
            server.stop()
    report(results, args)
    return 0


def report(results: dict[str, list[Stream]], args: argparse.Namespace) -> None:
    print(f"\n{args.rounds} rounds, {args.tokens} tokens per stream, one stream at a time\n")
    print(f"{'dialect':<20} {'tok/s':>8} {'TTFT ms':>8}   vs {'baseline':<19} "
          f"{'tok/s ratio':>11} {'TTFT +ms':>9}  verdict")  # fmt: skip
    for dialect in DIALECTS:
        mine = results[dialect.name]
        base_name = BASELINE.get(dialect.name, "openai-chat")
        base = results[base_name]
        ratio = statistics.median(m.tps / b.tps for m, b in zip(mine, base, strict=True))
        extra = statistics.median(m.ttft_ms - b.ttft_ms for m, b in zip(mine, base, strict=True))
        tps = statistics.median(s.tps for s in mine)
        ttft = statistics.median(s.ttft_ms for s in mine)
        if dialect.name == base_name:
            verdict, shown = "baseline", "-"
        else:
            ok = ratio >= TARGET_RATIO and extra <= TARGET_TTFT_MS
            verdict, shown = ("ok" if ok else "MISSED"), base_name
        print(f"{dialect.name:<20} {tps:>8.1f} {ttft:>8.1f}   vs {shown:<19} "
              f"{ratio:>11.3f} {extra:>+9.2f}  {verdict}")  # fmt: skip
    print(f"\ntargets: tok/s ratio >= {TARGET_RATIO}, TTFT within {TARGET_TTFT_MS} ms")


if __name__ == "__main__":
    sys.exit(main())
