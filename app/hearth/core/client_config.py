"""Ready-to-paste client configuration for a running Hearth endpoint (``hearth config``).

One function per client, shared by the CLI and the GUI's server panel. The coding
agents (Claude Code, Codex CLI) send long system prompts, so their snippets say when the
loaded context is too small for them (see ``AGENT_MIN_CONTEXT``).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

KEY_PLACEHOLDER = "<your Hearth API key>"
KEY_ENV = "HEARTH_API_KEY"  # the variable hearth's own CLI clients read the key from
AGENT_MIN_CONTEXT = 65536
"""Claude Code's first request is about 37k tokens (system prompt and tool schemas),
Codex CLI's about 23k; with room for the conversation and the reply, 64k is the least
that works in practice."""


@dataclass(frozen=True)
class Endpoint:
    base_url: str  # e.g. http://127.0.0.1:8677
    model: str
    keyed: bool = False
    fim: bool = True
    n_ctx: int | None = None  # the context per request of the loaded model, when known

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


def _context_note(endpoint: Endpoint, comment: str) -> list[str]:
    if endpoint.n_ctx is None or endpoint.n_ctx >= AGENT_MIN_CONTEXT:
        return []
    return [
        f"{comment} The model is loaded with a {endpoint.n_ctx}-token context; coding agents "
        "need about 64k",
        f"{comment} (their first prompt alone is 23k-37k tokens). Reload it with: "
        f"hearth serve --ctx {AGENT_MIN_CONTEXT} --parallel 1",
    ]


def claude_code_env(endpoint: Endpoint) -> str:
    """Environment variables for Claude Code, which speaks Anthropic Messages
    (``/v1/messages``). The token goes as ``Authorization: Bearer``; every model role
    (main, the small/fast one for titles and summaries) is the loaded model."""
    model = endpoint.model
    lines = [
        *_context_note(endpoint, "#"),
        f"export ANTHROPIC_BASE_URL={endpoint.base_url}",
        f"export ANTHROPIC_AUTH_TOKEN={shlex.quote(endpoint.api_key)}",
        f"export ANTHROPIC_MODEL={shlex.quote(model)}",
        f"export ANTHROPIC_SMALL_FAST_MODEL={shlex.quote(model)}",
        f"export ANTHROPIC_DEFAULT_SONNET_MODEL={shlex.quote(model)}",
        f"export ANTHROPIC_DEFAULT_OPUS_MODEL={shlex.quote(model)}",
        f"export ANTHROPIC_DEFAULT_HAIKU_MODEL={shlex.quote(model)}",
        "export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
    ]
    return "\n".join(lines) + "\n"


def codex_config(endpoint: Endpoint) -> str:
    """``~/.codex/config.toml`` for Codex CLI, which speaks OpenAI Responses
    (``/v1/responses``). Without a key Codex sends none, so ``env_key`` is only set
    when the endpoint needs one."""
    lines = [
        "# ~/.codex/config.toml",
        *_context_note(endpoint, "#"),
        f"model = {json.dumps(endpoint.model)}",
        'model_provider = "hearth"',
        "",
        "[model_providers.hearth]",
        'name = "Hearth"',
        f"base_url = {json.dumps(endpoint.base_url + '/v1')}",
        'wire_api = "responses"',
    ]
    if endpoint.keyed:
        lines += [f'env_key = "{KEY_ENV}"  # export {KEY_ENV}={KEY_PLACEHOLDER}']
    return "\n".join(lines) + "\n"


def copilot_settings(endpoint: Endpoint) -> str:
    """VS Code settings for Copilot Chat's Ollama provider (bring your own model): it
    reads Hearth's Ollama API (``/api/version``, ``/api/tags``, ``/api/show``
    capabilities) and chats on ``/v1/chat/completions``. That provider sends no key."""
    settings = {"github.copilot.chat.byok.ollamaEndpoint": endpoint.base_url}
    lines = [
        "// VS Code settings.json; then Chat > model picker > Manage Models > Ollama",
        json.dumps(settings, indent=2),
    ]
    if endpoint.keyed:
        lines.insert(
            1,
            "// Copilot's Ollama provider sends no API key: use it with an endpoint on "
            "this machine that does not require one.",
        )
    return "\n".join(lines) + "\n"


def llama_vscode_settings(endpoint: Endpoint) -> str:
    """VS Code settings for llama.vscode: code completion on ``/infill`` (the model's
    FIM tokens), chat and its agent on the OpenAI routes, all at the same base URL."""
    settings: dict[str, str] = {
        "llama-vscode.endpoint": endpoint.base_url,
        "llama-vscode.endpoint_chat": endpoint.base_url,
        "llama-vscode.endpoint_tools": endpoint.base_url,
    }
    if endpoint.keyed:
        settings["llama-vscode.api_key"] = endpoint.api_key
    lines = ["// VS Code settings.json", json.dumps(settings, indent=2)]
    if not endpoint.fim:
        lines.insert(
            1,
            "// The loaded model has no fill-in-the-middle tokens: completion needs a code "
            "model trained for FIM (Qwen2.5-Coder, CodeLlama, StarCoder2, Codestral).",
        )
    return "\n".join(lines) + "\n"


SNIPPETS = {
    "continue": continue_config,
    "openai": openai_snippet,
    "curl": curl_line,
    "claude-code": claude_code_env,
    "codex": codex_config,
    "copilot": copilot_settings,
    "llama-vscode": llama_vscode_settings,
}
