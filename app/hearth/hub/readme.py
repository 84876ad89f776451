"""A repo's model card: its README.md from the Hub, as markdown text.

Read with one GET of ``resolve/<revision>/README.md`` (the same route as any file),
capped in size, with the YAML front matter (licence, tags, widget settings) cut off:
the UI shows the prose. Blocking: call it from a worker thread.
"""

from __future__ import annotations

import logging

import httpx
from huggingface_hub import hf_hub_url

from hearth.hub.client import auth_headers, hub_endpoint, keyring_token
from hearth.hub.errors import HubUnavailableError
from hearth.hub.names import validate_repo_id

log = logging.getLogger(__name__)

README = "README.md"
MAX_README_BYTES = 512 * 1024  # a model card is text; a huge one is cut, not refused


def strip_front_matter(text: str) -> str:
    """``text`` without a leading ``---`` ... ``---`` YAML block."""
    if not text.startswith("---"):
        return text
    lines = text.splitlines(keepends=True)
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            return "".join(lines[i + 1 :]).lstrip("\n")
    return text


def fetch_readme(
    repo_id: str,
    *,
    revision: str = "main",
    endpoint: str | None = None,
    token: str | None = None,
) -> str | None:
    """The model card's markdown; None when the repo has none (or it can't be read)."""
    validate_repo_id(repo_id)
    url = hf_hub_url(repo_id, README, revision=revision, endpoint=hub_endpoint(endpoint))
    headers = auth_headers(token if token is not None else keyring_token())
    try:
        with (
            httpx.Client(follow_redirects=True, timeout=30) as client,
            client.stream("GET", url, headers=headers) as response,
        ):
            if response.status_code in (401, 403, 404):
                return None
            response.raise_for_status()
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) >= MAX_README_BYTES:
                    break
    except httpx.HTTPError as exc:
        raise HubUnavailableError(f"Could not read the model card of {repo_id}: {exc}") from exc
    text = bytes(body[:MAX_README_BYTES]).decode("utf-8", errors="replace")
    return strip_front_matter(text)
