"""``hearth config``: ready-to-paste client config for a running endpoint.

It asks the endpoint which model it serves (``/v1/models``) so the snippet names a
model that is really there; the snippet texts themselves live in
:mod:`hearth.core.client_config`, shared with the GUI's server panel.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

log = logging.getLogger(__name__)

CLIENTS = ["claude-code", "codex", "copilot", "llama-vscode", "continue", "openai", "curl"]


def add_parser(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    config = verbs.add_parser(
        "config",
        help="print working client config for a running endpoint",
        description="Print config for a coding tool (Claude Code, Codex CLI, Copilot's "
        "Ollama provider, llama.vscode, Continue), the OpenAI SDK or curl, for a running "
        "Hearth endpoint (it asks the endpoint which model it serves).",
    )
    config.add_argument("client", choices=CLIENTS)
    config.add_argument("--url", default=None, help="endpoint (default http://127.0.0.1:PORT)")
    config.add_argument("--api-key", default=None, help="key to ask the endpoint with")
    config.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return print_client_config(args.client, args.url, args.api_key)


def print_client_config(client: str, url: str | None, api_key: str | None) -> int:
    import httpx

    from hearth.core.client_config import SNIPPETS, Endpoint
    from hearth.server.options import API_KEY_ENV, DEFAULT_PORT

    base_url = (url or f"http://127.0.0.1:{DEFAULT_PORT}").rstrip("/")
    key = api_key or os.environ.get(API_KEY_ENV)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        response = httpx.get(f"{base_url}/v1/models", headers=headers, timeout=5)
    except httpx.HTTPError as exc:
        log.error(
            "No Hearth endpoint answers at %s (%s). Start one with 'hearth serve' or pass --url.",
            base_url,
            exc,
        )
        return 1
    if response.status_code == 401:
        if key:
            log.error(
                "The endpoint at %s refused the API key given: check it with "
                "'hearth keys list', or create one with 'hearth keys create NAME'.",
                base_url,
            )
        else:
            log.error("The endpoint at %s needs an API key: pass --api-key.", base_url)
        return 1
    models = response.json().get("data", [])
    if not models:
        log.error("The endpoint at %s has no model loaded yet.", base_url)
        return 1
    model = models[0]
    endpoint = Endpoint(
        base_url=base_url,
        model=model["id"],
        keyed=bool(key),
        fim=bool(model.get("meta", {}).get("fim", False)),
        n_ctx=model.get("meta", {}).get("n_ctx"),
    )
    sys.stdout.write(SNIPPETS[client](endpoint))
    return 0
