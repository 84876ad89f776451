"""Errors of the hub package, each with a message that tells the user what to do.

Hub access problems (gated, private, bad token) are turned into exact guidance here, in
one place, whether they come from huggingface_hub's metadata calls or from our own
ranged GET.
"""

from __future__ import annotations

from hearth.core.errors import HearthError

DEFAULT_ENDPOINT = "https://huggingface.co"


class HubError(HearthError):
    """Base of every error raised by ``hearth.hub``."""

    code = "hub_error"


class UnsafePathError(HubError):
    """A file name or repo id from the Hub could escape the models folder or is odd."""

    code = "unsafe_path"


class HubAccessError(HubError):
    """The Hub refused access (gated repo, private repo, missing or bad token)."""

    code = "hub_access_denied"

    def __init__(self, message: str, *, repo_id: str, status: int | None) -> None:
        super().__init__(message)
        self.repo_id = repo_id
        self.status = status


class GatedRepoAccessError(HubAccessError):
    """The repo is gated: the user needs a token and must accept the licence."""

    code = "gated_repo"


class RemoteNotFoundError(HubError):
    """The repo, revision or file does not exist on the Hub."""

    code = "not_found"


class HubUnavailableError(HubError):
    """The Hub could not be reached, or kept failing after every retry."""

    code = "hub_unavailable"


class DownloadError(HubError):
    """A download failed for a reason other than access or disk space."""

    code = "download_failed"


class InsufficientDiskSpaceError(DownloadError):
    """Not enough free space to start (checked before anything is written)."""

    code = "insufficient_disk_space"


class DiskFullError(DownloadError):
    """The disk filled up while writing; the partial file is a consistent prefix."""

    code = "disk_full"


class ChecksumMismatchError(DownloadError):
    """The downloaded bytes do not match the sha256 the Hub advertises."""

    code = "checksum_mismatch"


class DownloadCancelledError(DownloadError):
    """The user cancelled the download; its partial file was deleted."""

    code = "download_cancelled"


def access_error(
    repo_id: str,
    *,
    status: int | None,
    error_code: str | None,
    error_message: str | None,
    has_token: bool,
    endpoint: str = DEFAULT_ENDPOINT,
) -> HubAccessError | RemoteNotFoundError:
    """Turn a 401/403/404 from the Hub into an error that says exactly what to do.

    ``error_code`` and ``error_message`` are the Hub's ``X-Error-Code`` and
    ``X-Error-Message`` response headers.
    """
    base = endpoint.rstrip("/")
    repo_url = f"{base}/{repo_id}"
    tokens_url = f"{base}/settings/tokens"
    add_token = (
        "Add a Hugging Face token in Settings > Hugging Face account (or run "
        f"'hearth login'; create a 'read' token at {tokens_url})"
    )
    if error_code == "GatedRepo":
        if not has_token or status == 401:
            return GatedRepoAccessError(
                f"{repo_id} is a gated model. {add_token}, then accept the licence at "
                f"{repo_url} while logged in to that same account, and retry.",
                repo_id=repo_id,
                status=status,
            )
        return GatedRepoAccessError(
            f"{repo_id} is a gated model and your Hugging Face account has no access yet. "
            f"Accept the licence at {repo_url} while logged in to the account that owns "
            "your token (some authors review requests: wait for the approval e-mail), "
            "then retry.",
            repo_id=repo_id,
            status=status,
        )
    if status == 401 and error_message and "Invalid credentials" in error_message:
        return HubAccessError(
            f"Hugging Face rejected your token while opening {repo_id}. Replace it in "
            "Settings > Hugging Face account (or with 'hearth login') with a valid 'read' "
            f"token from {tokens_url}.",
            repo_id=repo_id,
            status=status,
        )
    if error_code == "EntryNotFound":
        return RemoteNotFoundError(f"That file does not exist in {repo_url}.")
    if error_code == "RevisionNotFound":
        return RemoteNotFoundError(
            f"That revision (branch, tag or commit) of {repo_id} does not exist."
        )
    if status in (401, 404) or error_code == "RepoNotFound":
        if has_token:
            return HubAccessError(
                f"{repo_id} was not found, or your Hugging Face token has no access to it. "
                f"Check the name at {repo_url}; for a private repo, use a token of an "
                "account that can read it.",
                repo_id=repo_id,
                status=status,
            )
        return HubAccessError(
            f"{repo_id} was not found on the Hub. Check the name at {repo_url}. If it is "
            f"a private repo, {add_token[0].lower()}{add_token[1:]} for an account that "
            "can read it.",
            repo_id=repo_id,
            status=status,
        )
    if status == 403:
        return HubAccessError(
            f"Your Hugging Face token is not allowed to read {repo_id}"
            f"{': ' + error_message if error_message else ''}. Use a token with 'read' "
            f"access ({tokens_url}) from an account that can see {repo_url}.",
            repo_id=repo_id,
            status=status,
        )
    return HubAccessError(
        f"The Hub refused access to {repo_id} (HTTP {status}"
        f"{': ' + error_message if error_message else ''}).",
        repo_id=repo_id,
        status=status,
    )
