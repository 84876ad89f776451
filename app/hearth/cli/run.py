"""``hearth run MODEL [PROMPT]``: chat with a model in the terminal, the Ollama way.

The model is a library model, or ``OWNER/REPO[:QUANT]``, pulled first when it is not
here (asking before a download that won't fit). If the app (or a ``hearth serve``) is
running, its worker answers, loading the model just in time, so no second copy of a
model is loaded; otherwise a worker of this command's own loads it and stops at the end.
With a prompt (or text on standard input) it answers once; without, it opens a chat
that keeps its history: ``/bye`` or Ctrl+D leaves, ``/clear`` forgets, ``\"\"\"`` starts
and ends a multi-line message, and Ctrl+C stops a reply.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hearth.cli.console import err

if TYPE_CHECKING:
    from hearth.supervisor import WorkerClient

Message = dict[str, str]

HELP = """Commands:
  /bye      leave (Ctrl+D too)
  /clear    forget this conversation
  /?        this help
Start and end a multi-line message with \"\"\". Ctrl+C stops a reply."""


def add_parser(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = verbs.add_parser("run", help="chat with a model in the terminal (pulls and loads it)")
    run.add_argument("model", help="a library model (see 'hearth ls'), or OWNER/REPO[:QUANT]")
    run.add_argument("prompt", nargs="*", help="answer this and exit; without it, chat")
    run.add_argument("--system", help="a system prompt")
    run.add_argument("--ctx", type=int, default=None, help="context tokens (a new load only)")
    run.add_argument("--max-tokens", type=int, default=None, help="longest reply, in tokens")
    run.add_argument("--temperature", type=float, default=None)
    run.add_argument("--seed", type=int, default=None)
    run.add_argument("--own-worker", action="store_true", help="don't use a running app's worker")
    run.set_defaults(handler=run_verb)


def run_verb(args: argparse.Namespace) -> int:
    from hearth.core.errors import HearthError
    from hearth.supervisor import SupervisorError, WorkerError

    try:
        return asyncio.run(_run(args))
    except (HearthError, WorkerError) as exc:
        err(exc.message if isinstance(exc, HearthError) else str(exc))
        return 1
    except SupervisorError as exc:
        err(str(exc))
        return 1
    except KeyboardInterrupt:
        return 130


async def _run(args: argparse.Namespace) -> int:
    found = await _find_model(args.model, args.ctx)
    if found is None:
        return 1
    name, path = found
    prompt = _one_shot_prompt(args.prompt)
    async with _worker(path, args) as client:
        options = _sampling(args)
        history: list[Message] = [{"role": "system", "content": args.system}] if args.system else []
        if prompt is not None:
            history.append({"role": "user", "content": prompt})
            await _answer(client, name, history, options)
            return 0
        await _chat(client, name, history, options)
    return 0


# ---------------------------------------------------------------------- the model
async def _find_model(ref: str, ctx: int | None) -> tuple[str, Path] | None:
    """The model's client-facing name and file, pulling ``OWNER/REPO`` when needed."""
    from hearth.library.library import Library

    library = Library()
    model = library.get(ref)
    if model is None and "/" in ref and not ref.lower().endswith(".gguf"):
        from hearth.cli.pull import pull_model

        pulled = await pull_model(ref, ctx=ctx or 4096, confirm=_ask_download_anyway)
        if pulled is None:
            return None
        model = library.get(str(pulled))
    if model is None:
        err(f"'{ref}' is not in the library. See 'hearth ls', or pull it: hearth pull OWNER/REPO")
        return None
    if not model.ok:
        err(f"{model.id} can't be used: {model.error}")
        return None
    return model.id.removesuffix(".gguf"), model.path


def _ask_download_anyway(summary: str) -> bool:
    if not sys.stdin.isatty():
        return False
    err(f"This model won't fit on this machine: {summary}")
    return input("Download it anyway? [y/N] ").strip().lower() in ("y", "yes")


def _one_shot_prompt(words: list[str]) -> str | None:
    """The prompt from the arguments, with any piped standard input appended."""
    text = " ".join(words).strip()
    if not sys.stdin.isatty():
        piped = sys.stdin.read().strip()
        text = f"{text}\n\n{piped}".strip() if piped else text
    return text or None


def _sampling(args: argparse.Namespace) -> dict[str, Any]:
    chosen = {"max_tokens": args.max_tokens, "temperature": args.temperature, "seed": args.seed}
    return {k: v for k, v in chosen.items() if v is not None}


# ---------------------------------------------------------------------- the worker
@contextlib.asynccontextmanager
async def _worker(path: Path, args: argparse.Namespace) -> AsyncIterator[WorkerClient]:
    """A running worker that answers (the app's first), else one of our own."""
    from hearth.cli.workers import live_workers
    from hearth.supervisor import WorkerClient

    workers = [] if args.own_worker else await asyncio.to_thread(live_workers)
    if workers:
        live = workers[0]
        err(f"Using the {live.record.kind}'s worker at {live.record.base_url}.")
        async with WorkerClient(live.record.base_url, token=live.token) as client:
            yield client
        return
    from hearth.config.folders import log_dir
    from hearth.supervisor import LoadOptions, Supervisor

    supervisor = Supervisor(log_dir=log_dir())
    err(f"Loading {path.name}...")
    try:
        await supervisor.start(path, LoadOptions(n_ctx=args.ctx))
        own = supervisor.client
        if own is None:
            raise RuntimeError("the worker started without a client")
        yield own
    finally:
        await supervisor.stop()


# ---------------------------------------------------------------------- talking
async def _answer(
    client: WorkerClient, name: str, history: list[Message], options: dict[str, Any]
) -> None:
    """Stream one reply to stdout and add it to ``history``; Ctrl+C stops it early."""
    parts: list[str] = []

    async def stream() -> None:
        async for piece in client.stream_chat(history, model=name, **options):
            parts.append(piece)
            sys.stdout.write(piece)
            sys.stdout.flush()

    task = asyncio.ensure_future(stream())
    with _ctrl_c_cancels(task), contextlib.suppress(asyncio.CancelledError):
        await task
    sys.stdout.write("\n")
    sys.stdout.flush()
    if task.cancelled():
        err("(stopped)")
    history.append({"role": "assistant", "content": "".join(parts)})


@contextlib.contextmanager
def _ctrl_c_cancels(task: asyncio.Future[None]) -> Any:
    """While ``task`` runs, Ctrl+C cancels it instead of ending the program."""
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, task.cancel)
    except (NotImplementedError, RuntimeError):  # Windows: KeyboardInterrupt as usual
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)


async def _chat(
    client: WorkerClient, name: str, history: list[Message], options: dict[str, Any]
) -> None:
    err(f"Chatting with {name}. /? for help, /bye to leave.")
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401  (line editing and history for input())
    system = list(history)
    while True:
        try:
            text = await asyncio.to_thread(read_message, input)
        except EOFError:
            err("")
            return
        except KeyboardInterrupt:
            err("\nUse /bye or Ctrl+D to leave.")
            continue
        command = text.strip()
        if not command:
            continue
        if command == "/bye":
            return
        if command == "/clear":
            history[:] = system
            err("Cleared the conversation.")
            continue
        if command in ("/?", "/help"):
            err(HELP)
            continue
        history.append({"role": "user", "content": text})
        await _answer(client, name, history, options)


def read_message(read_line: Callable[[str], str]) -> str:
    """One message: a line, or the lines between a pair of ``\"\"\"``."""
    first = read_line(">>> ")
    if not first.lstrip().startswith('"""'):
        return first
    body = first.lstrip()[3:]
    if body.rstrip().endswith('"""') and body.strip():
        return body.rstrip()[:-3]
    lines = [body] if body else []
    while True:
        line = read_line("... ")
        if line.rstrip().endswith('"""'):
            lines.append(line.rstrip()[:-3])
            return "\n".join(lines).strip("\n")
        lines.append(line)
