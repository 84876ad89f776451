"""What a model in the library can do, read from its GGUF header without loading it.

The worker decides what a loaded model advertises (Ollama's ``capabilities``, the call
format replies are parsed with) by ``core.model_traits`` at load; the Library shows the
same verdict before any load, from the header alone, so a user can pick a model that
calls tools or thinks without trying each one. The header has no vocabulary to look
at (the token list is only counted), so this reads the chat template and metadata:
what a template writes is also what makes the worker advertise it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from hearth.core.model_traits import model_traits
from hearth.library.gguf_metadata import GgufMetadata

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Capability:
    """One thing a model can be asked to do, as a chip: ``key`` is Ollama's name for it
    where Ollama has one ("tools", "thinking", "insert", "embedding")."""

    key: str
    label: str
    tooltip: str


def model_capabilities(
    meta: GgufMetadata | None, kind: str = "model", projector: Path | None = None
) -> tuple[Capability, ...]:
    """The capabilities of the model (``kind``: its ``general.type``) that ``meta``
    describes; none for a file without a header or an adapter. ``projector``: the
    vision projector paired with it (``LocalModel.projector``), which makes it see."""
    if meta is None:
        return ()
    if kind == "mmproj":
        return (Capability("vision", "Vision projector",
                           "The image encoder of a multimodal model, loaded beside it; "
                           "not a model to chat with."),)  # fmt: skip
    if kind != "model":
        return ()
    traits = model_traits(meta.chat_template or None, (), meta.kv, fim=meta.supports_fim)
    found: list[Capability] = []
    for name in traits.capabilities():
        if name == "tools":
            found.append(Capability("tools", "Tools",
                                    "Its chat template lists tools; calls are read in the "
                                    f"{traits.tool_format.value} format."))  # fmt: skip
        elif name == "thinking":
            markers = traits.reasoning.name if traits.reasoning else "its own"
            found.append(Capability("thinking", "Reasoning",
                                    f"Thinks before it answers ({markers} markers); the "
                                    "chat folds the reasoning above the reply."))  # fmt: skip
        elif name == "insert":
            found.append(Capability("insert", "Fill-in-middle",
                                    "Has fill-in-the-middle tokens: code completion in an "
                                    "editor (/infill, a completion's suffix)."))  # fmt: skip
        elif name == "embedding":
            found.append(Capability("embedding", "Embedding",
                                    "An embedding model: /v1/embeddings and /api/embed, "
                                    "no chat."))  # fmt: skip
    if projector is not None:
        found.append(Capability("vision", "Vision",
                                f"Sees images: paired with the projector {projector.name} "
                                "in its folder, loaded with it."))  # fmt: skip
    return tuple(found)
