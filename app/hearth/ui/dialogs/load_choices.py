"""The Load dialog's choices as they are kept in the settings, per model path.

``Settings.model_load_options[<resolved path>]`` holds the last choices made for a
model (a plain dict, so the settings file stays readable and versionable);
:func:`choices_to_save` writes them and :func:`saved_load_options` reads them back as
:class:`LoadOptions` (unknown keys from other versions are ignored).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hearth.supervisor import LoadOptions
from hearth.ui.app_settings import SettingsStore


def model_key(model_path: Path | str) -> str:
    """The settings key of a model: its resolved path."""
    return str(Path(model_path).expanduser().resolve())


def choices_to_save(opts: LoadOptions) -> dict[str, Any]:
    """What the Load dialog remembers of ``opts``."""
    saved: dict[str, Any] = {
        "n_ctx": opts.n_ctx,
        "n_parallel": opts.n_parallel,
        "n_threads": opts.n_threads,
        "cache_type_k": opts.cache_type_k,
        "cache_type_v": opts.cache_type_v,
        "flash_attention": opts.flash_attention,
        "use_mmap": opts.use_mmap,
        "use_mlock": opts.use_mlock,
        "chat_format": opts.chat_format,  # None: detect
        "spec_mode": opts.spec_mode,  # speculative decoding: off, ngram or draft
        "draft_model": opts.draft_model,  # the draft's path, with "draft"
        "draft_max": opts.draft_max,
        "mmproj": opts.mmproj,  # a projector chosen by hand; None: the one beside it
        "vision": opts.vision,  # False: loaded without a projector
    }
    if opts.n_gpu_layers is not None:
        saved["n_gpu_layers"] = opts.n_gpu_layers
    return saved


def saved_load_options(store: SettingsStore, model_path: Path | str) -> LoadOptions | None:
    """The options last chosen for ``model_path`` in the Load dialog, if any."""
    saved = store.settings.model_load_options.get(model_key(model_path))
    if not saved:
        return None
    known = set(LoadOptions.__dataclass_fields__)
    return LoadOptions(**{k: v for k, v in saved.items() if k in known})
