"""Hugging Face Hub: GGUF search, repo listings, and a resumable download manager.

Qt-free and llama.cpp-free. huggingface_hub is used for search and metadata (sizes,
LFS sha256, commits, auth headers); the bytes are fetched with our own ranged GETs so a
download survives pauses, dropped connections, restarts and ``kill -9``.
"""

from hearth.hub.downloads import DownloadManager
from hearth.hub.errors import (
    ChecksumMismatchError,
    DiskFullError,
    DownloadCancelledError,
    DownloadError,
    GatedRepoAccessError,
    HubAccessError,
    HubError,
    HubUnavailableError,
    InsufficientDiskSpaceError,
    RemoteNotFoundError,
    UnsafePathError,
)
from hearth.hub.handle import DownloadHandle
from hearth.hub.names import local_model_path, parse_quant, parse_shard, safe_relative_path
from hearth.hub.progress import DownloadEvent, DownloadState
from hearth.hub.repo import GgufFile, GgufModel, RepoListing, list_repo_gguf
from hearth.hub.search import ModelSearch, ModelSummary, SearchPage, search_models
from hearth.hub.transfer import RetryPolicy

__all__ = [
    "ChecksumMismatchError",
    "DiskFullError",
    "DownloadCancelledError",
    "DownloadError",
    "DownloadEvent",
    "DownloadHandle",
    "DownloadManager",
    "DownloadState",
    "GatedRepoAccessError",
    "GgufFile",
    "GgufModel",
    "HubAccessError",
    "HubError",
    "HubUnavailableError",
    "InsufficientDiskSpaceError",
    "ModelSearch",
    "ModelSummary",
    "RemoteNotFoundError",
    "RepoListing",
    "RetryPolicy",
    "SearchPage",
    "UnsafePathError",
    "list_repo_gguf",
    "local_model_path",
    "parse_quant",
    "parse_shard",
    "safe_relative_path",
    "search_models",
]
