"""Soak: a real ``hearth serve`` under mixed traffic for a long time; does it grow?

It synthesizes the tiny test model (tests/gguf_factory.py, quantized to Q8_0), starts
``hearth serve`` on it on 127.0.0.1, then keeps at most ``--concurrency`` clients busy
until ``--minutes`` have passed, each picking at random:

- OpenAI chat, streaming and not; OpenAI completions, streaming and not;
- Ollama chat (NDJSON stream); OpenAI embeddings;
- streams the client drops after a few chunks (a disconnect mid-generation);
- bodies the server must refuse (bad JSON, wrong types): a 4xx is the right answer;
- ``/api/show`` and ``/hearth/v1/status``.

Every ``--sample-s`` seconds it reads the worker's RSS and thread count (psutil). After
the run it prints RSS at the start, at the end of the warm-up (``--warmup-minutes``,
default 2), at the end and at its highest, the growth after warm-up, and a verdict
against the target: growth after warm-up < 16 MiB. It stops the server itself.

Run it niced on a shared machine: ``nice -n 10 .venv/bin/python bench/soak.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

TESTS = Path(__file__).resolve().parents[1] / "tests"
if str(TESTS) not in sys.path:
    sys.path.append(str(TESTS))  # after site-packages: tests/hearth.py must not shadow hearth

import gguf_factory as gf  # noqa: E402

MIB = 1024 * 1024
TARGET_GROWTH_MIB = 16.0
PROMPTS = [
    "Tell me about the fire that keeps the house warm",
    "Write a short poem about a river",
    "def add(a, b):",
    "What is the capital of the world of tokens",
    "Explain streaming and batching in one sentence",
    "hello world",
]


@dataclass
class Sample:
    t: float  # seconds since traffic started
    rss: int
    threads: int


@dataclass
class Tally:
    ok: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)

    @property
    def served(self) -> int:
        return sum(self.ok.values())

    @property
    def failures(self) -> int:
        return sum(self.failed.values())


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_model(folder: Path) -> Path:
    f16 = gf.write_tiny_llama(folder / "soak-tiny-F16.gguf")
    q8: Path = gf.quantize(f16, folder / "soak-tiny-Q8_0.gguf", "Q8_0")
    return q8


def start_server(
    model: Path, port: int, args: argparse.Namespace, log: Path
) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "hearth", "serve", "--model", str(model),
        "--host", "127.0.0.1", "--port", str(port), "--ctx", str(args.ctx),
        "--parallel", str(args.parallel), "--threads", str(args.threads),
        "--no-stored-keys",
    ]  # fmt: skip
    with log.open("wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)


def wait_healthy(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"hearth serve exited early:\n{log.read_text(errors='replace')}")
        try:
            reply = httpx.get(f"{url}/health", timeout=2)
            if reply.status_code == 200 and reply.json().get("status") == "ok":
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"hearth serve did not become healthy:\n{log.read_text(errors='replace')}")


# --------------------------------------------------------------------------- traffic


class Traffic:
    """The request kinds; each returns normally when the server answered as it should."""

    def __init__(self, client: httpx.AsyncClient, model_id: str, rng: random.Random):
        self.client = client
        self.model = model_id
        self.rng = rng

    def _messages(self) -> list[dict[str, str]]:
        return [{"role": "user", "content": self.rng.choice(PROMPTS)}]

    def _tokens(self) -> int:
        return self.rng.randint(4, 48)

    async def chat(self) -> None:
        body = {"model": self.model, "messages": self._messages(), "max_tokens": self._tokens()}
        reply = await self.client.post("/v1/chat/completions", json=body)
        _expect(reply.status_code == 200 and reply.json()["choices"][0]["message"], reply)

    async def chat_stream(self) -> None:
        body = {
            "model": self.model,
            "messages": self._messages(),
            "max_tokens": self._tokens(),
            "stream": True,
        }
        async with self.client.stream("POST", "/v1/chat/completions", json=body) as reply:
            _expect(reply.status_code == 200, reply)
            lines = [line async for line in reply.aiter_lines() if line.startswith("data:")]
        _expect(lines and lines[-1].strip() == "data: [DONE]", reply)

    async def completion(self) -> None:
        body = {
            "model": self.model,
            "prompt": self.rng.choice(PROMPTS),
            "max_tokens": self._tokens(),
        }
        reply = await self.client.post("/v1/completions", json=body)
        _expect(reply.status_code == 200 and "text" in reply.json()["choices"][0], reply)

    async def completion_stream(self) -> None:
        body = {
            "model": self.model,
            "prompt": self.rng.choice(PROMPTS),
            "max_tokens": self._tokens(),
            "stream": True,
        }
        async with self.client.stream("POST", "/v1/completions", json=body) as reply:
            _expect(reply.status_code == 200, reply)
            lines = [line async for line in reply.aiter_lines() if line.startswith("data:")]
        _expect(lines and lines[-1].strip() == "data: [DONE]", reply)

    async def ollama_chat(self) -> None:
        body = {
            "model": self.model,
            "messages": self._messages(),
            "stream": True,
            "options": {"num_predict": self._tokens()},
        }
        async with self.client.stream("POST", "/api/chat", json=body) as reply:
            _expect(reply.status_code == 200, reply)
            chunks = [json.loads(line) async for line in reply.aiter_lines() if line.strip()]
        _expect(chunks and chunks[-1].get("done") is True, reply)

    async def embeddings(self) -> None:
        texts = [self.rng.choice(PROMPTS) for _ in range(self.rng.randint(1, 4))]
        reply = await self.client.post("/v1/embeddings", json={"model": self.model, "input": texts})
        _expect(reply.status_code == 200 and len(reply.json()["data"]) == len(texts), reply)

    async def dropped_stream(self) -> None:
        """Read a few chunks of a long stream, then hang up (the server must free the slot)."""
        body = {"model": self.model, "prompt": self.rng.choice(PROMPTS), "max_tokens": 400,
                "stream": True}  # fmt: skip
        keep = self.rng.randint(1, 5)
        async with self.client.stream("POST", "/v1/completions", json=body) as reply:
            _expect(reply.status_code == 200, reply)
            seen = 0
            async for line in reply.aiter_lines():
                seen += line.startswith("data:")
                if seen >= keep:
                    break  # leaving the block closes the connection mid-stream

    async def bad_body(self) -> None:
        kind = self.rng.randrange(4)
        if kind == 0:
            reply = await self.client.post(
                "/v1/chat/completions", content=b"{not json",
                headers={"content-type": "application/json"},
            )  # fmt: skip
        elif kind == 1:
            reply = await self.client.post(
                "/v1/chat/completions", json={"model": self.model, "messages": "nope"}
            )
        elif kind == 2:
            reply = await self.client.post(
                "/v1/completions", json={"model": self.model, "prompt": "x", "max_tokens": -5}
            )
        else:
            reply = await self.client.post("/api/chat", json={"messages": [{"role": 7}]})
        _expect(400 <= reply.status_code < 500, reply)

    async def show(self) -> None:
        reply = await self.client.post("/api/show", json={"model": self.model})
        _expect(reply.status_code == 200 and "model_info" in reply.json(), reply)

    async def status(self) -> None:
        reply = await self.client.get("/hearth/v1/status")
        _expect(reply.status_code == 200, reply)


class UnexpectedReplyError(Exception):
    """The server answered, but not as it should have."""


def _expect(condition: object, reply: httpx.Response) -> None:
    if not condition:
        raise UnexpectedReplyError(
            f"{reply.request.method} {reply.request.url.path} -> {reply.status_code}"
        )


WEIGHTS = {
    "chat_stream": 6,
    "chat": 3,
    "completion_stream": 3,
    "completion": 3,
    "ollama_chat": 3,
    "embeddings": 2,
    "dropped_stream": 2,
    "bad_body": 2,
    "show": 1,
    "status": 2,
}


async def client_loop(
    traffic: Traffic, deadline: float, tally: Tally, skip: frozenset[str]
) -> None:
    kinds = [kind for kind in WEIGHTS if kind not in skip]
    weights = [WEIGHTS[kind] for kind in kinds]
    while time.monotonic() < deadline:
        kind = traffic.rng.choices(kinds, weights)[0]
        try:
            await asyncio.wait_for(getattr(traffic, kind)(), timeout=120)
        except (
            UnexpectedReplyError,
            httpx.HTTPError,
            asyncio.TimeoutError,
            KeyError,
            ValueError,
        ) as exc:
            tally.failed[kind] += 1
            tally.errors[f"{kind}: {type(exc).__name__}: {exc}"[:160]] += 1
        else:
            tally.ok[kind] += 1


async def sampler_loop(
    worker: psutil.Process, start: float, deadline: float, every_s: float, out: list[Sample]
) -> None:
    while True:
        now = time.monotonic()
        try:
            with worker.oneshot():
                out.append(Sample(now - start, worker.memory_info().rss, worker.num_threads()))
        except psutil.Error:
            return
        if now >= deadline:
            return
        await asyncio.sleep(min(every_s, max(deadline - now, 0.01)))


async def soak(url: str, model_id: str, worker: psutil.Process, args: argparse.Namespace
               ) -> tuple[list[Sample], Tally, float]:  # fmt: skip
    tally = Tally()
    samples: list[Sample] = []
    start = time.monotonic()
    deadline = start + args.minutes * 60
    limits = httpx.Limits(max_connections=args.concurrency * 2)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        clients = [
            client_loop(
                Traffic(client, model_id, random.Random(args.seed + i)),
                deadline,
                tally,
                frozenset(args.skip),
            )
            for i in range(args.concurrency)
        ]
        await asyncio.gather(sampler_loop(worker, start, deadline, args.sample_s, samples),
                             *clients)  # fmt: skip
    return samples, tally, time.monotonic() - start


# --------------------------------------------------------------------------- report


def _at(samples: list[Sample], t: float) -> Sample:
    return min(samples, key=lambda s: abs(s.t - t))


def _slope_mib_per_min(samples: list[Sample]) -> float:
    if len(samples) < 3:
        return 0.0
    ts = [s.t / 60 for s in samples]
    rs = [s.rss / MIB for s in samples]
    mean_t, mean_r = statistics.fmean(ts), statistics.fmean(rs)
    var = sum((t - mean_t) ** 2 for t in ts)
    return (
        sum((t - mean_t) * (r - mean_r) for t, r in zip(ts, rs, strict=True)) / var if var else 0.0
    )


def report(samples: list[Sample], tally: Tally, elapsed: float, args: argparse.Namespace) -> bool:
    warm_t = args.warmup_minutes * 60
    first, last = samples[0], samples[-1]
    warm = _at(samples, warm_t)
    after = [s for s in samples if s.t >= warm.t]
    peak = max(after, key=lambda s: s.rss)
    growth = (last.rss - warm.rss) / MIB
    peak_growth = (peak.rss - warm.rss) / MIB
    commit = (
        args.commit
        or subprocess.run(
            ["git", "-C", str(Path(__file__).resolve().parent), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    )
    print(f"\nsoak: {elapsed / 60:.1f} min, {args.concurrency} clients, commit {commit or '?'}, "
          f"{platform.machine()} {psutil.cpu_count(logical=True)} CPUs, Python "
          f"{platform.python_version()}")  # fmt: skip
    print(f"requests served: {tally.served} ({tally.served / elapsed:.1f}/s); "
          f"unexpected failures: {tally.failures}")  # fmt: skip
    for kind in WEIGHTS:
        print(f"  {kind:<18} ok {tally.ok[kind]:>6}  failed {tally.failed[kind]:>4}")
    for error, count in tally.errors.most_common(8):
        print(f"  ! {count} x {error}")
    print(f"samples: {len(samples)}, every {args.sample_s:g} s")
    print(f"RSS start            {first.rss / MIB:8.1f} MiB   threads {first.threads}")
    print(f"RSS after warm-up    {warm.rss / MIB:8.1f} MiB   threads {warm.threads}  "
          f"(t = {warm.t / 60:.1f} min)")  # fmt: skip
    print(f"RSS end              {last.rss / MIB:8.1f} MiB   threads {last.threads}")
    print(f"RSS peak after w-u   {peak.rss / MIB:8.1f} MiB   (t = {peak.t / 60:.1f} min)")
    print(f"threads min/max after warm-up: {min(s.threads for s in after)}"
          f"/{max(s.threads for s in after)}")  # fmt: skip
    print(f"slope after warm-up: {_slope_mib_per_min(after):+.3f} MiB/min")
    print(f"growth after warm-up: {growth:+.1f} MiB (end), {peak_growth:+.1f} MiB (peak)")
    passed = growth < TARGET_GROWTH_MIB and peak_growth < TARGET_GROWTH_MIB
    print(f"target: growth after warm-up < {TARGET_GROWTH_MIB:g} MiB -> "
          f"{'MET' if passed else 'NOT MET'}")  # fmt: skip
    return passed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=20.0, help="traffic duration")
    parser.add_argument("--warmup-minutes", type=float, default=2.0)
    parser.add_argument("--sample-s", type=float, default=5.0, help="RSS sampling period")
    parser.add_argument("--concurrency", type=int, default=8, help="clients at once (<= 8)")
    parser.add_argument("--ctx", type=int, default=512, help="context per slot")
    parser.add_argument("--parallel", type=int, default=4, help="server slots")
    parser.add_argument("--threads", type=int, default=1, help="server decode threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=list(WEIGHTS),
        help="leave out a kind of request (repeatable); e.g. --skip status, as the GUI and "
        "'hearth serve' without --ttl never ask for the status",
    )
    parser.add_argument("--commit", default="", help="label for the code measured")
    parser.add_argument("--log", type=Path, default=None, help="keep the server log here")
    args = parser.parse_args()
    args.concurrency = max(1, min(args.concurrency, 8))
    # A terminated soak still stops its server (the finally below runs on SystemExit).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="hearth-soak-") as tmp:
        folder = Path(tmp)
        model = make_model(folder)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        log = args.log or folder / "serve.log"
        process = start_server(model, port, args, log)
        try:
            wait_healthy(process, url, log)
            worker = psutil.Process(process.pid)
            model_id = model.name.removesuffix(".gguf")
            samples, tally, elapsed = asyncio.run(soak(url, model_id, worker, args))
            alive = process.poll() is None
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        if not alive:
            print(f"the server died during the soak:\n{log.read_text(errors='replace')[-4000:]}")
            return 2
        return 0 if report(samples, tally, elapsed, args) else 1


if __name__ == "__main__":
    sys.exit(main())
