"""What the benches of several models on one server share (residency.py,
returning_model.py): timed streamed requests, long filler prompts, the model files and
a throwaway library to serve them from.

A request's latency here is what a client sees: TTFT from sending to the first streamed
text, total to the stream's end. The last chunks' ``usage`` and ``timings`` (Hearth and
llama-server both send them) say how much of the prompt came from a cache.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from gguf_synth import ensure_bench_model
from real_model import local_real_model

WORDS = [
    "the", "river", "runs", "past", "old", "stone", "walls", "while", "people", "walk",
    "dogs", "and", "talk", "about", "weather", "markets", "books", "music", "food",
    "gardens", "trains", "long", "summer", "evenings",
]  # fmt: skip
REQUEST_TIMEOUT_S = 1800.0


def filler(n_words: int, seed: int = 0) -> str:
    """A system prompt or document of ``n_words`` words (~1.1 tokens each on Gemma 3);
    a different ``seed`` gives a text that differs from its first word, so no prefix is
    shared with another seed's."""
    head = f"You are a careful assistant. Context {seed} follows. "
    step = 7 + 2 * (seed % 5)  # coprime with len(WORDS), so every word is used
    return head + " ".join(WORDS[(i * step + seed) % len(WORDS)] for i in range(n_words))


@dataclass
class Timed:
    """One streamed request as the client saw it."""

    ttft: float
    total: float
    text: str
    usage: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)

    @property
    def cached_tokens(self) -> int | None:
        details = self.usage.get("prompt_tokens_details") or {}
        cached = details.get("cached_tokens", self.timings.get("cache_n"))
        return None if cached is None else int(cached)

    @property
    def prompt_tokens(self) -> int | None:
        value = self.usage.get("prompt_tokens")
        return None if value is None else int(value)


def timed(url: str, path: str, body: dict[str, object]) -> Timed:
    """POST ``body`` as a stream (with usage) and time it; raises on a non-200 status
    or an error event, so a failed request never counts as a fast one."""
    payload = {**body, "stream": True, "stream_options": {"include_usage": True}}
    started = time.perf_counter()
    first: float | None = None
    parts: list[str] = []
    usage: dict[str, Any] = {}
    timings: dict[str, Any] = {}
    with httpx.stream("POST", f"{url}{path}", json=payload, timeout=REQUEST_TIMEOUT_S) as r:
        if r.status_code != 200:
            raise RuntimeError(f"{path}: HTTP {r.status_code}: {r.read()[:500]!r}")
        for line in r.iter_lines():
            if not line.startswith("data: {"):
                continue
            event = json.loads(line[6:])
            if "error" in event:
                raise RuntimeError(f"{path}: error event {event['error']}")
            usage = event.get("usage") or usage
            timings = event.get("timings") or timings
            for choice in event.get("choices") or []:
                piece = choice.get("text") or (choice.get("delta") or {}).get("content")
                if piece:
                    first = time.perf_counter() if first is None else first
                    parts.append(piece)
    end = time.perf_counter()
    if first is None:
        raise RuntimeError(f"{path}: the stream ended without any text")
    return Timed(first - started, end - started, "".join(parts), usage, timings)


def chat_body(model: str, system: str, question: str, max_tokens: int) -> dict[str, object]:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    return {"model": model, "messages": messages, "max_tokens": max_tokens, "temperature": 0}


def completion_body(model: str, prompt: str, max_tokens: int) -> dict[str, object]:
    return {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}


def code_prompt(i: int) -> str:
    """An autocomplete request: a file's head that grows as the user types (so a
    completion server's prefix cache helps, as it does for Continue) plus a new line."""
    head = "".join(f"def helper_{k}(v):\n    return v * {k} + {k % 7}\n\n" for k in range(12))
    return head + "".join(f"total_{k} = helper_{k % 12}({k})\n" for k in range(i)) + "def f("


def model_files() -> tuple[Path, Path]:
    """(chat model, completion model): Gemma 3 270M where it is on disk (else the bench
    model), and the synthesized 250M bench model."""
    completion = ensure_bench_model()
    return local_real_model() or completion, completion


def throwaway_library(work: Path, files: list[Path]) -> list[str]:
    """Import ``files`` in place into a library under ``work`` (for this process and
    the servers it starts) and return their model names, in order."""
    os.environ["HEARTH_DATA_DIR"] = str(work / "data")
    os.environ["HEARTH_CONFIG_DIR"] = str(work / "config")
    from hearth.library.library import Library  # after the folders are set

    library = Library()
    for path in dict.fromkeys(files):
        library.import_in_place(path)
    return [path.stem for path in files]
