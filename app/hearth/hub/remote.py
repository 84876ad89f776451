"""What the Hub says about one file right now: url, etag, commit, size, checksum.

Metadata only, through huggingface_hub (``hf_hub_url``, ``get_hf_file_metadata`` and
``get_paths_info``). The bytes themselves are fetched by ``hearth.hub.transfer``.
Blocking: call from a worker thread.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from huggingface_hub import get_hf_file_metadata, hf_hub_url
from huggingface_hub.hf_api import RepoFile

from hearth import __version__
from hearth.hub.client import LIBRARY_NAME, hub_endpoint, make_api, sends_token, translate_hf_error
from hearth.hub.errors import DownloadError, RemoteNotFoundError
from hearth.hub.names import safe_relative_path, validate_repo_id
from hearth.hub.sidecar import Sidecar

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RemoteFile:
    repo_id: str
    filename: str
    revision: str  # what the user asked for (a branch, tag or commit)
    commit: str | None  # the commit the revision resolved to
    url: str  # resolve URL pinned to the commit when known
    etag: str
    size: int
    sha256: str | None
    git_oid: str | None

    def to_sidecar(self) -> Sidecar:
        return Sidecar(
            repo_id=self.repo_id,
            filename=self.filename,
            revision=self.revision,
            url=self.url,
            etag=self.etag,
            commit=self.commit,
            size=self.size,
            sha256=self.sha256,
            git_oid=self.git_oid,
        )


def resolve_remote(
    repo_id: str,
    filename: str,
    *,
    revision: str = "main",
    endpoint: str | None = None,
    token: str | None = None,
) -> RemoteFile:
    """HEAD the file (auth and gating show up here), then read its LFS info at that commit."""
    validate_repo_id(repo_id)
    safe_relative_path(filename)
    base = hub_endpoint(endpoint)
    try:
        url = hf_hub_url(repo_id, filename, revision=revision, endpoint=base)
        meta = get_hf_file_metadata(
            url,
            token=token,
            endpoint=base,
            library_name=LIBRARY_NAME,
            library_version=__version__,
            retry_on_errors=False,  # we retry ourselves, reporting RETRYING
        )
        commit = meta.commit_hash
        api = make_api(base, token)
        infos = api.get_paths_info(repo_id, [filename], revision=commit or revision)
    except Exception as exc:
        raise translate_hf_error(exc, repo_id, has_token=sends_token(token), endpoint=base) from exc
    entry = next((i for i in infos if isinstance(i, RepoFile) and i.path == filename), None)
    if entry is None:
        raise RemoteNotFoundError(f"{filename} is not a file in {base}/{repo_id}.")
    size = meta.size if meta.size is not None else entry.size
    if size is None or size < 0:
        raise DownloadError(f"The Hub did not say how large {filename} is; cannot download it.")
    if entry.size is not None and entry.size != size:
        raise DownloadError(
            f"The Hub gave two sizes for {filename} ({size} and {entry.size}); it may be "
            "changing right now. Try again in a minute."
        )
    sha256 = entry.lfs.sha256.lower() if entry.lfs is not None else None
    if not meta.etag:
        raise DownloadError(f"The Hub sent no ETag for {filename}; cannot resume it safely.")
    if sha256 is None and not entry.blob_id:
        raise DownloadError(f"The Hub gave no checksum for {filename}; refusing to download it.")
    pinned = hf_hub_url(repo_id, filename, revision=commit, endpoint=base) if commit else url
    log.debug("resolved %s/%s@%s -> %s (%d bytes)", repo_id, filename, revision, commit, size)
    return RemoteFile(
        repo_id=repo_id,
        filename=filename,
        revision=revision,
        commit=commit,
        url=pinned,
        etag=meta.etag,
        size=size,
        sha256=sha256,
        git_oid=entry.blob_id if sha256 is None else None,
    )
