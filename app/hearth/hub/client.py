"""Where the Hub is, how to authenticate, and how its errors become Hearth errors."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from huggingface_hub import HfApi
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.utils import build_hf_headers  # type: ignore[attr-defined]

from hearth import __version__
from hearth.config.secrets import SecretStoreError, get_hf_token
from hearth.hub.errors import DEFAULT_ENDPOINT, HubError, HubUnavailableError, access_error

log = logging.getLogger(__name__)

ENDPOINT_ENV = "HF_ENDPOINT"
LIBRARY_NAME = "hearth"

TokenProvider = Callable[[], str | None]


def hub_endpoint(endpoint: str | None = None) -> str:
    """The Hub base URL: the argument, else ``$HF_ENDPOINT`` (read now), else huggingface.co."""
    chosen = endpoint or os.environ.get(ENDPOINT_ENV) or DEFAULT_ENDPOINT
    return chosen.rstrip("/")


def keyring_token() -> str | None:
    """The HF token from the OS keyring; None when unset or the keyring is unavailable."""
    try:
        return get_hf_token()
    except SecretStoreError as exc:
        log.warning("cannot read the Hugging Face token from the keyring: %s", exc)
        return None


def make_api(endpoint: str | None = None, token: str | None = None) -> HfApi:
    """An ``HfApi`` bound to our endpoint; ``token=None`` lets huggingface_hub look for one."""
    return HfApi(
        endpoint=hub_endpoint(endpoint),
        token=token,
        library_name=LIBRARY_NAME,
        library_version=__version__,
    )


def auth_headers(token: str | None) -> dict[str, str]:
    """Headers for a request to the Hub: user agent, and ``Authorization`` if we have a token.

    ``token=None`` falls back to ``$HF_TOKEN`` or a token saved by ``hf auth login``.
    """
    headers = build_hf_headers(token=token, library_name=LIBRARY_NAME, library_version=__version__)
    headers["Accept-Encoding"] = "identity"
    return dict(headers)


def has_auth(headers: dict[str, str]) -> bool:
    return any(k.lower() == "authorization" for k in headers)


def sends_token(token: str | None) -> bool:
    """Whether a request with ``token`` carries one (an implicit ``$HF_TOKEN`` counts)."""
    return has_auth(auth_headers(token))


def translate_hf_error(exc: Exception, repo_id: str, *, has_token: bool, endpoint: str) -> HubError:
    """Map an exception raised by huggingface_hub to a Hearth error with guidance."""
    if isinstance(exc, HubError):
        return exc
    if isinstance(exc, HfHubHTTPError) and exc.response is not None:
        response = exc.response
        status = response.status_code
        code = response.headers.get("X-Error-Code")
        message = response.headers.get("X-Error-Message")
        if isinstance(exc, GatedRepoError):
            code = "GatedRepo"
        elif isinstance(exc, RemoteEntryNotFoundError):
            code = code or "EntryNotFound"
        elif isinstance(exc, RevisionNotFoundError):
            code = code or "RevisionNotFound"
        elif isinstance(exc, RepositoryNotFoundError):
            code = code or "RepoNotFound"
        if status in (401, 403, 404) or code:
            return access_error(
                repo_id,
                status=status,
                error_code=code,
                error_message=message,
                has_token=has_token,
                endpoint=endpoint,
            )
        return HubUnavailableError(
            f"The Hugging Face Hub answered HTTP {status} for {repo_id}; try again later."
        )
    if isinstance(exc, OSError | TimeoutError) or type(exc).__module__.startswith("httpx"):
        return HubUnavailableError(
            f"Could not reach the Hugging Face Hub at {endpoint} ({exc}). Check your "
            "network connection and try again."
        )
    raise exc
