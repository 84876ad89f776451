"""Reading a remote GGUF's header with ranged GETs, to answer "will it fit?" first."""

from __future__ import annotations

import logging

import httpx
from huggingface_hub import hf_hub_url

from hearth.hub.client import auth_headers, hub_endpoint, keyring_token
from hearth.hub.errors import HubUnavailableError, access_error
from hearth.hub.names import safe_relative_path, validate_repo_id
from hearth.library.gguf_metadata import GgufMetadata, read_metadata_incremental

log = logging.getLogger(__name__)


def remote_metadata(
    repo_id: str,
    filename: str,
    *,
    revision: str = "main",
    size: int | None = None,
    endpoint: str | None = None,
    token: str | None = None,
) -> GgufMetadata:
    """The header of a GGUF on the Hub, reading only as many bytes as it needs."""
    validate_repo_id(repo_id)
    safe_relative_path(filename)
    url = hf_hub_url(repo_id, filename, revision=revision, endpoint=hub_endpoint(endpoint))
    headers = auth_headers(token if token is not None else keyring_token())

    with httpx.Client(follow_redirects=True, timeout=30) as client:

        def fetch(n: int) -> bytes:
            try:
                response = client.get(url, headers={**headers, "Range": f"bytes=0-{n - 1}"})
                if response.status_code in (401, 403, 404):
                    raise access_error(
                        repo_id=repo_id,
                        status=response.status_code,
                        error_code=response.headers.get("x-error-code"),
                        error_message=response.headers.get("x-error-message"),
                        has_token="authorization" in {k.lower() for k in headers},
                        endpoint=hub_endpoint(endpoint),
                    )
                response.raise_for_status()
            except httpx.HTTPError as exc:
                raise HubUnavailableError(
                    f"Could not read the header of {repo_id}/{filename}: {exc}"
                ) from exc
            return response.content[:n]

        return read_metadata_incremental(fetch, total_size=size)
