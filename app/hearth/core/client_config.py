"""Ready-to-paste client configuration for a running Hearth endpoint (``hearth config``)."""

from __future__ import annotations

import json
from dataclasses import dataclass

KEY_PLACEHOLDER = "<your Hearth API key>"


@dataclass(frozen=True)
class Endpoint:
    base_url: str  # e.g. http://127.0.0.1:8677
    model: str
    keyed: bool = False
    fim: bool = True

    @property
    def api_key(self) -> str:
        return KEY_PLACEHOLDER if self.keyed else "hearth"


def continue_config(endpoint: Endpoint) -> str:
    """Continue's config.yaml: chat plus tab autocomplete, through the OpenAI provider."""
    roles = "\n      - chat\n      - edit\n      - apply"
    lines = [
        "name: Hearth",
        "version: 1.0.0",
        "schema: v1",
        "models:",
        f"  - name: {endpoint.model} (Hearth)",
        "    provider: openai",
        f"    model: {endpoint.model}",
        f"    apiBase: {endpoint.base_url}/v1",
        f"    apiKey: {json.dumps(endpoint.api_key)}",
        f"    roles:{roles}",
    ]
    if endpoint.fim:
        lines += [
            f"  - name: {endpoint.model} autocomplete (Hearth)",
            "    provider: openai",
            f"    model: {endpoint.model}",
            f"    apiBase: {endpoint.base_url}/v1",
            f"    apiKey: {json.dumps(endpoint.api_key)}",
            "    roles:\n      - autocomplete",
            "    useLegacyCompletionsEndpoint: true",
        ]
    return "\n".join(lines) + "\n"


def openai_snippet(endpoint: Endpoint) -> str:
    return (
        "from openai import OpenAI\n\n"
        f'client = OpenAI(base_url="{endpoint.base_url}/v1", api_key="{endpoint.api_key}")\n'
        "reply = client.chat.completions.create(\n"
        f'    model="{endpoint.model}",\n'
        '    messages=[{"role": "user", "content": "Hello!"}],\n'
        ")\n"
        "print(reply.choices[0].message.content)\n"
    )


def curl_line(endpoint: Endpoint) -> str:
    auth = f" -H 'Authorization: Bearer {endpoint.api_key}'" if endpoint.keyed else ""
    body = json.dumps(
        {"model": endpoint.model, "messages": [{"role": "user", "content": "Hello!"}]}
    )
    return (
        f"curl {endpoint.base_url}/v1/chat/completions{auth} "
        f"-H 'Content-Type: application/json' -d '{body}'\n"
    )


SNIPPETS = {"continue": continue_config, "openai": openai_snippet, "curl": curl_line}
