"""Local models: scan folders, import in place, read GGUF metadata, delete (Qt-free).

Never imports llama_cpp; quantizing runs in a child process (``quantize_job``).
"""

from hearth.library.discovery import DiscoveredModel, HostEnv, discover_all
from hearth.library.errors import InvalidModelFileError, LibraryError, NeedMoreBytesError
from hearth.library.gguf_metadata import (
    GgufMetadata,
    TensorInfo,
    read_metadata,
    read_metadata_incremental,
)
from hearth.library.library import Library, LocalModel, ModelSource

__all__ = [
    "DiscoveredModel",
    "GgufMetadata",
    "HostEnv",
    "InvalidModelFileError",
    "Library",
    "LibraryError",
    "LocalModel",
    "ModelSource",
    "NeedMoreBytesError",
    "TensorInfo",
    "discover_all",
    "read_metadata",
    "read_metadata_incremental",
]
