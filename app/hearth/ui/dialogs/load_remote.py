"""Remote models in the Load dialog: what applies to them, and what does not.

A remote model is a name ``engine/model`` whose prefix names an engine registered in
``config/engines.py`` (vLLM, Ollama, llama-server, another Hearth). It runs on that
engine's machine: its memory, GPU layers, context and slots are that server's own
settings, so the dialog says so instead of showing knobs that would change nothing
(issue 15). Qt-free, so the rule is tested without widgets.
"""

from __future__ import annotations

import logging
from pathlib import Path

from hearth.config.engines import EngineConfigError, EngineRegistry, EngineSpec

log = logging.getLogger(__name__)


def remote_engine(name: str | Path, registry: EngineRegistry) -> EngineSpec | None:
    """The registered engine that serves ``name``, or None for a local model (a GGUF
    path, or a name whose prefix is no engine)."""
    text = str(name)
    if "/" not in text or text.lower().endswith(".gguf") or text.startswith(("/", ".", "~")):
        return None
    prefix = text.split("/", 1)[0]
    try:
        return registry.get(prefix)
    except EngineConfigError as exc:  # an unreadable engines file: treat it as local
        log.warning("engines file unreadable while opening the Load dialog: %s", exc)
        return None


def remote_note(name: str, engine: EngineSpec) -> str:
    """What the dialog shows for a remote model in place of the memory controls."""
    return (
        f"{name} runs on the remote engine '{engine.name}' ({engine.url}), not on this "
        "machine. Its memory, GPU layers, context length and parallel slots are set on "
        "that server, so there is nothing to choose or estimate here: Hearth sends the "
        "chat's requests to it as they are."
    )
