"""Does the chat view keep up? A 10,000-token markdown reply at 1,000 tok/s.

Feeds a synthetic reply (paragraphs, lists, fenced code) into the real ``ChatView``
at a fixed token rate while 8 API clients stream from a real ``hearth serve`` (in
another thread, as an IDE would), and measures:

- the longest stall of the Qt event loop (a 5 ms QTimer probe; target <= 33 ms);
- the token rate actually shown: tokens / (last token on screen - first token fed)
  (target >= 990 tok/s), and the worst lag between fed and shown text.

The same run also measures the naive reference: ``QTextBrowser.setMarkdown`` of the
whole text every 10 ms. With ``--pdf-pages N`` it also streams while a PDF of N pages
is attached to the chat (the real ``ChatController`` and its documents: read in a child
process, stored and indexed on the store's thread, chips updated per page), beside the
reference of reading it with pypdf in a thread of the GUI's own process. Run offscreen:

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/ui.py [--no-clients] [--pdf-pages 300]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import httpx
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QTextBrowser

from hearth.ui.chat.view import ChatView
from hearth.ui.event_loop import create_event_loop

log = logging.getLogger("bench.ui")
TESTS = Path(__file__).resolve().parents[1] / "tests"


def synthetic_reply(n_tokens: int) -> list[str]:
    """A markdown reply cut into ``n_tokens`` pieces of at most 4 visible characters."""
    section = (
        "## Step {i}\n\nHere is how the **parser** handles `tokens` in part {i}. It reads"
        " the input, keeps a small *state*, and emits events as soon as they are final.\n\n"
        "- first, split the text into lines\n- then, find fences and blank lines\n"
        "- finally, render each block once\n\n"
        "```python\ndef step_{i}(text: str) -> list[str]:\n"
        '    """Split {i}."""\n    out = []\n    for line in text.splitlines():\n'
        "        if line.strip():  # skip blanks\n            out.append(line.upper())\n"
        "    return out\n```\n\n"
        "```js\nconst step{i} = (xs) => xs.map((x) => x * {i}).filter(Boolean);\n```\n\n"
        "1. Check the result.\n2. Repeat with *more* data.\n\n"
    )
    tokens: list[str] = []
    i = 0
    while len(tokens) < n_tokens:
        tokens += re.findall(r"\s*\S{1,4}", section.format(i=i))
        i += 1
    return tokens[:n_tokens]


@dataclass
class Result:
    name: str
    stall_ms: float
    shown_tok_s: float
    max_lag_ms: float
    frames: int
    worst_frame_ms: float  # the longest single render (the part the renderer owns)


class StallProbe:
    def __init__(self, interval_ms: int = 5) -> None:
        self.interval = interval_ms / 1000
        self.max_gap = 0.0
        self._last = 0.0
        self.timer = QTimer()
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self._tick)

    def start(self) -> None:
        self._last = time.perf_counter()
        self.timer.start()

    def _tick(self) -> None:
        now = time.perf_counter()
        self.max_gap = max(self.max_gap, now - self._last - self.interval)
        self._last = now

    def stop(self) -> float:
        self.timer.stop()
        return max(self.max_gap, 0.0) * 1000


async def feed(
    tokens: list[str],
    rate: float,
    push: Callable[[str], None],
    shown: Callable[[], int],
    fed_counter: list[int],
) -> tuple[float, float]:
    """Push tokens on schedule (late ticks catch up, like a socket buffer); returns
    (seconds from first token fed to last token shown, worst fed-shown lag in s)."""
    start = time.perf_counter()
    sent = 0
    max_lag = 0.0
    while sent < len(tokens) or shown() < len(tokens):
        now = time.perf_counter()
        due = min(len(tokens), int((now - start) * rate) + 1)
        if due > sent:
            push("".join(tokens[sent:due]))
            sent = due
            fed_counter[0] = sent
        max_lag = max(max_lag, (sent - shown()) / rate)
        await asyncio.sleep(0.001)
    return time.perf_counter() - start, max_lag


class PdfIndexing:
    """A PDF attached while the reply streams: through the chat's documents (a child
    process reads it), or, as the reference, read by pypdf in a thread of this process."""

    def __init__(self, pdf: Path, in_process: bool) -> None:
        self.pdf = pdf
        self.in_process = in_process
        self.seconds: float | None = None
        self._started = 0.0
        self._thread: threading.Thread | None = None

    def prepare(self, view: ChatView, db_path: Path) -> None:
        """The chat around the view (before the stall probe starts)."""
        if self.in_process:
            return
        from hearth.chats import AsyncChatStore
        from hearth.supervisor import Supervisor
        from hearth.ui.chat.session import ChatController
        from hearth.ui.tasks import TaskSet

        self.db = AsyncChatStore(db_path)
        self.db.sync(lambda s: s.schema_version)  # opened and migrated
        self.chat = ChatController(view, Supervisor(), TaskSet(), db=self.db)
        self.chat.documents.settled.connect(self._settled)

    def start(self) -> None:
        self._started = time.perf_counter()
        if not self.in_process:
            self.chat.documents.attach([self.pdf])
            return
        from hearth.chats.doc_parse import parse_document

        def read() -> None:
            parse_document(self.pdf)
            self.seconds = time.perf_counter() - self._started

        self._thread = threading.Thread(target=read, daemon=True)
        self._thread.start()

    def _settled(self, _key: int) -> None:
        self.seconds = time.perf_counter() - self._started

    def state(self, view: ChatView) -> str:
        texts = [chip.label.text() for chip in view.documents.chips.values()]
        return "; ".join(texts) or "read in a thread"


async def run_hearth(
    tokens: list[str], rate: float, pdf: PdfIndexing | None = None, workdir: Path | None = None
) -> Result:
    view = ChatView()
    view.resize(900, 700)
    view.show()
    view.add_user_turn("Write the parser, with code.")
    view.begin_assistant_turn()
    view.set_generating(True)
    worst = [0.0]
    writer = view._writer
    assert writer is not None
    render = writer.render

    def timed_render() -> bool:
        t0 = time.perf_counter()
        drew = render()
        worst[0] = max(worst[0], time.perf_counter() - t0)
        return drew

    writer.render = timed_render  # type: ignore[method-assign]
    fed = [0]
    shown = [0]
    # A token is on screen once the flush after it was fed has run.
    view.transcript_updated.connect(lambda: shown.__setitem__(0, fed[0]))
    if pdf is not None:
        assert workdir is not None
        pdf.prepare(view, workdir / f"chats-{time.monotonic_ns()}.db")
    probe = StallProbe()
    probe.start()
    if pdf is not None:
        pdf.start()
    elapsed, lag = await feed(tokens, rate, view.append_delta, lambda: shown[0], fed)
    stall = probe.stop()
    view.set_generating(False)
    view.end_assistant_turn()
    frames = view.flush_count
    name = "Hearth (incremental)"
    if pdf is not None:
        name += " + PDF in a GUI thread" if pdf.in_process else " + PDF attached"
        done = f"{pdf.seconds:.1f} s" if pdf.seconds is not None else "not finished"
        print(f"{name}: indexing took {done}; chip: {pdf.state(view)}")
        if not pdf.in_process:
            pdf.db.close()
    view.close()
    view.deleteLater()
    return Result(name, stall, len(tokens) / elapsed, lag * 1000, frames, worst[0] * 1000)


async def run_naive(tokens: list[str], rate: float) -> Result:
    browser = QTextBrowser()
    browser.resize(900, 700)
    browser.show()
    parts: list[str] = []
    fed = [0]
    shown = [0]
    frames = [0]
    worst = [0.0]

    def repaint() -> None:
        if shown[0] < fed[0]:
            count = fed[0]
            t0 = time.perf_counter()
            browser.setMarkdown("".join(parts))
            worst[0] = max(worst[0], time.perf_counter() - t0)
            shown[0] = count
            frames[0] += 1

    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(repaint)
    timer.start()
    probe = StallProbe()
    probe.start()
    elapsed, lag = await feed(tokens, rate, parts.append, lambda: shown[0], fed)
    stall = probe.stop()
    timer.stop()
    browser.close()
    browser.deleteLater()
    return Result(
        "naive setMarkdown / 10 ms",
        stall,
        len(tokens) / elapsed,
        lag * 1000,
        frames[0],
        worst[0] * 1000,
    )


class ApiClients:
    """N streaming chat clients against a real ``hearth serve``, in another process (as
    an IDE would be: they must not share the GUI's interpreter lock)."""

    def __init__(self, n: int, workdir: Path, threads: int) -> None:
        sys.path.insert(0, str(TESTS))
        import gguf_factory
        from server_process import start_serve

        f16 = gguf_factory.write_tiny_llama(workdir / "bench-tiny-F16.gguf")
        model = gguf_factory.quantize(f16, workdir / "bench-tiny-Q8_0.gguf", "Q8_0")
        # One decode thread: on a 2-core machine the other core is the GUI's and the
        # clients'. (More threads than free cores starves every process alike.)
        self.server = start_serve(model, workdir, "--threads", str(threads), ctx=1024, parallel=n)
        self.n = n
        self.report = workdir / "clients.txt"
        self.tokens = 0
        self.errors = 0
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        args = [sys.executable, __file__, "--run-clients", self.server.base_url]
        args += ["--clients", str(self.n), "--report", str(self.report)]
        self._proc = subprocess.Popen(args, stdin=subprocess.PIPE)

    def stop(self) -> None:
        if self._proc is not None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()  # the clients stop when their stdin closes
            self._proc.wait(timeout=30)
            if self.report.exists():
                tokens, errors = self.report.read_text().split()
                self.tokens, self.errors = int(tokens), int(errors)
        self.server.stop()


async def _stream_forever(base_url: str, n: int, stop: asyncio.Event, counts: list[int]) -> None:
    async def one(http: httpx.AsyncClient, k: int) -> None:
        body = {
            "messages": [{"role": "user", "content": f"client {k}: tell a story"}],
            "max_tokens": 200,
            "stream": True,
        }
        while not stop.is_set():
            try:
                async with http.stream("POST", "/v1/chat/completions", json=body) as resp:
                    async for line in resp.aiter_lines():
                        if line.startswith("data: {"):
                            counts[0] += 1
            except httpx.HTTPError:
                counts[1] += 1
                await asyncio.sleep(0.1)

    async with httpx.AsyncClient(base_url=base_url, timeout=60, trust_env=False) as http:
        tasks = [asyncio.create_task(one(http, k)) for k in range(n)]
        await stop.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def run_clients(base_url: str, n: int, report: Path) -> int:
    """The client process: stream until stdin closes, then write "tokens errors"."""
    counts = [0, 0]

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        threading.Thread(
            target=lambda: (sys.stdin.read(), loop.call_soon_threadsafe(stop.set)), daemon=True
        ).start()
        await _stream_forever(base_url, n, stop, counts)

    asyncio.run(main())
    report.write_text(f"{counts[0]} {counts[1]}")
    return 0


def write_bench_pdf(path: Path, pages: int) -> Path:
    """A PDF of ``pages`` pages of 40 lines of prose (tests/pdf_factory.py)."""
    sys.path.append(str(TESTS))  # appended: tests/hearth.py must not shadow the package
    from pdf_factory import write_pdf

    words = ["the", "team", "reviewed", "quarterly", "report", "and", "discussed", "schedule"]
    lines = [[" ".join(words[(p + n + k) % len(words)] for k in range(14)) for n in range(40)]
             for p in range(pages)]  # fmt: skip
    return write_pdf(path, lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=1000.0, help="tokens per second")
    parser.add_argument("--clients", type=int, default=8, help="API clients streaming meanwhile")
    parser.add_argument("--no-clients", action="store_true", help="skip the API clients")
    parser.add_argument(
        "--worker-threads",
        type=int,
        default=max(1, (os.cpu_count() or 2) // 2),
        help="decode threads of the hearth serve the clients use (default: half the cores)",
    )
    parser.add_argument(
        "--pdf-pages", type=int, default=0, help="also stream while a PDF of N pages is attached"
    )
    parser.add_argument("--run-clients", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--report", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_clients:
        return run_clients(args.run_clients, args.clients, args.report)
    logging.basicConfig(level=logging.WARNING)

    app = QApplication.instance() or QApplication(sys.argv[:1])
    loop = create_event_loop(app)  # type: ignore[arg-type]
    asyncio.set_event_loop(loop)
    tokens = synthetic_reply(args.tokens)
    clients = None
    with tempfile.TemporaryDirectory(prefix="hearth-bench-ui-") as tmp:
        if not args.no_clients and args.clients > 0:
            clients = ApiClients(args.clients, Path(tmp), args.worker_threads)
            clients.start()
            time.sleep(1.0)  # let the streams get going
        results = []
        try:
            with loop:
                results.append(loop.run_until_complete(run_hearth(tokens, args.rate)))
                results.append(loop.run_until_complete(run_naive(tokens, args.rate)))
                if args.pdf_pages:
                    pdf = write_bench_pdf(Path(tmp) / "bench.pdf", args.pdf_pages)
                    for in_process in (False, True):
                        indexing = PdfIndexing(pdf, in_process)
                        run = run_hearth(tokens, args.rate, indexing, Path(tmp))
                        results.append(loop.run_until_complete(run))
        finally:
            if clients is not None:
                clients.stop()
    background = (
        f"{args.clients} API clients streaming ({clients.tokens} chunks, {clients.errors} errors)"
        if clients is not None
        else "no API clients"
    )
    print(f"\n{args.tokens} tokens at {args.rate:g} tok/s, {background}\n")
    print(
        f"| {'renderer':<28} | longest stall | shown tok/s | worst lag | longest frame | frames |"
    )
    print(f"|{'-' * 30}|--------------:|------------:|----------:|--------------:|-------:|")
    for r in results:
        print(
            f"| {r.name:<28} | {r.stall_ms:10.1f} ms | {r.shown_tok_s:11.1f} |"
            f" {r.max_lag_ms:6.0f} ms | {r.worst_frame_ms:10.1f} ms | {r.frames:6d} |"
        )
    ours = [r for r in results if "naive" not in r.name and "GUI thread" not in r.name]
    ok = all(r.stall_ms <= 33 and r.shown_tok_s >= 0.99 * args.rate for r in ours)
    print(
        f"\ntargets: stall <= 33 ms, shown >= {0.99 * args.rate:g} tok/s -> "
        f"{'PASS' if ok else 'FAIL'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
