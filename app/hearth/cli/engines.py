"""``hearth engines``: add, list (with a health probe) and remove remote engines.

A remote engine (vLLM, llama-server, LM Studio, SGLang, Ollama or another Hearth) lends
its models to Hearth's endpoint as ``NAME/model``. Its key is read from stdin, never
from the command line (which shells and ``ps`` keep), and stored as a secret.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING

from hearth.cli.console import err, out
from hearth.cli.store_option import add_store_option, remember_if_chosen

if TYPE_CHECKING:
    from hearth.config.engines import EngineRegistry, EngineSpec
    from hearth.server.remote.probe import ProbeResult


def add_parser(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    engines = verbs.add_parser(
        "engines",
        help="remote engines (vLLM, Ollama, llama-server, another Hearth) behind the endpoint",
    )
    actions = engines.add_subparsers(dest="engines_action", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="add an engine by URL; its models appear as NAME/model")
    add.add_argument("name", help="a short name, the prefix of its models (e.g. gpu-box)")
    add.add_argument("url", help="its base URL, e.g. http://gpu-box:8000 (a /v1 suffix is fine)")
    add.add_argument(
        "--kind",
        choices=["openai", "ollama"],
        default="openai",
        help="openai: vLLM, llama-server, LM Studio, SGLang, Hearth (default); ollama: Ollama",
    )
    add.add_argument(
        "--api-key-stdin", action="store_true", help="read the engine's API key from stdin"
    )
    add.add_argument("--replace", action="store_true", help="replace an engine of that name")
    add.add_argument("--no-probe", action="store_true", help="do not contact the engine now")
    add_store_option(add)
    ls = actions.add_parser("ls", help="list engines with their health and models")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    ls.add_argument("--no-probe", action="store_true", help="list without contacting them")
    rm = actions.add_parser("rm", help="remove an engine and its stored key")
    rm.add_argument("name")
    engines.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from hearth.config.engines import EngineConfigError, EngineRegistry
    from hearth.config.secrets import SecretStoreError, open_store

    try:
        registry = EngineRegistry(store=open_store(getattr(args, "store", None)))
        if args.engines_action == "add":
            return _add(args, registry)
        if args.engines_action == "ls":
            return _ls(args, registry)
        if registry.remove(args.name):
            out(f"Removed engine '{args.name}'.")
            return 0
        err(f"No engine named '{args.name}' (see 'hearth engines ls').")
        return 1
    except (EngineConfigError, ValueError) as exc:
        err(str(exc))
        return 1
    except SecretStoreError as exc:
        err(exc.message)
        return 1


def _add(args: argparse.Namespace, registry: EngineRegistry) -> int:
    from hearth.config.engines import EngineKind

    api_key: str | None = None
    if args.api_key_stdin:
        api_key = sys.stdin.readline().strip()
        if not api_key:
            err("No API key on stdin (pipe it in, e.g. 'pass show gpu-box | hearth engines add').")
            return 1
    spec = registry.add(
        args.name, args.url, EngineKind(args.kind), api_key, replace_existing=args.replace
    )
    remember_if_chosen(args)
    key_note = " with its API key" if api_key else ""
    out(f"Added engine '{spec.name}' ({spec.kind.value}) at {spec.url}{key_note}.")
    if args.no_probe:
        return 0
    (result,) = _probe_all(registry, (spec,))
    if result.ok:
        names = ", ".join(m.namespaced for m in result.models[:5]) or "no models"
        more = f" and {len(result.models) - 5} more" if len(result.models) > 5 else ""
        out(f"{result.identity}, {result.latency_ms:.0f} ms: {names}{more}.")
    else:
        err(f"Warning: engine '{spec.name}' did not answer: {result.error}. It stays added; "
            "check it with 'hearth engines ls'.")  # fmt: skip
    return 0


def _ls(args: argparse.Namespace, registry: EngineRegistry) -> int:
    specs = registry.engines()
    results = {} if args.no_probe else {r.engine: r for r in _probe_all(registry, specs)}
    if args.json:
        out(json.dumps([_json(spec, results.get(spec.name)) for spec in specs], indent=2))
        return 0
    if not specs:
        err("No remote engines. Add one with 'hearth engines add NAME URL'.")
        return 0
    out(f"{'NAME':<16} {'KIND':<7} {'KEY':<4} {'URL':<32} HEALTH")
    for spec in specs:
        result = results.get(spec.name)
        if result is None:
            health = "-"
        elif result.ok:
            health = f"ok {result.latency_ms:.0f} ms, {len(result.models)} model(s)"
        else:
            health = f"down: {result.error}"
        key = "yes" if spec.has_key else "no"
        out(f"{spec.name:<16} {spec.kind.value:<7} {key:<4} {spec.url:<32} {health}")
        if result is not None and result.ok:
            out(f"{'':<16} {result.identity}")
            for model in result.models:
                context = f"  (context {model.context_length})" if model.context_length else ""
                out(f"{'':<16}   {model.namespaced}{context}")
    return 0


def _json(spec: EngineSpec, result: ProbeResult | None) -> dict[str, object]:
    item: dict[str, object] = {
        "name": spec.name, "url": spec.url, "kind": spec.kind.value, "has_key": spec.has_key,
    }  # fmt: skip
    if result is not None:
        item.update(
            ok=result.ok,
            latency_ms=round(result.latency_ms, 1),
            identity=result.identity,
            error=result.error,
            models=[{"id": m.namespaced, "context_length": m.context_length}
                    for m in result.models],
        )  # fmt: skip
    return item


def _probe_all(registry: EngineRegistry, specs: tuple[EngineSpec, ...]) -> list[ProbeResult]:
    from hearth.config.secrets import SecretStoreError
    from hearth.server.remote.probe import ProbeResult, probe

    async def one(spec: EngineSpec) -> ProbeResult:
        try:
            key = registry.api_key(spec)
        except SecretStoreError as exc:
            return ProbeResult(spec.name, False, 0.0, error=f"key unreadable: {exc.message}")
        return await probe(spec, key)

    async def every() -> list[ProbeResult]:
        return list(await asyncio.gather(*(one(spec) for spec in specs)))

    return asyncio.run(every())
