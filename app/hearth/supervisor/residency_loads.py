"""Loading a model into the running worker, beside the models it holds or instead of
them (the Load dialog's "Load alongside" and "Replace"), and waiting until it is there.

The worker's admin load (``WorkerClient.load``) answers at once and loads in the
background. The wait reads the worker's status until the model is among its loaded
models (by its file), or the worker says the load failed; the progress it reports goes
to ``on_progress``. Reading the status again and again, rather than following the state
events, cannot miss a load that finished before the wait began.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any

from hearth.config.launch import NO_MODEL
from hearth.core.errors import ModelLoadError
from hearth.core.model_info import LoadConfig
from hearth.core.residency import LoadedModel
from hearth.supervisor.client import WorkerClient
from hearth.supervisor.launch_options import LoadOptions

log = logging.getLogger(__name__)

POLL_S = 0.2
DEFAULT_TIMEOUT_S = 120.0


def load_fields(options: LoadOptions, model: Path | None = None) -> dict[str, Any]:
    """Every LoadConfig setting for a load with ``options`` (the worker's defaults
    elsewhere), as the admin load takes them: all of them, so that nothing carries over
    from another model's load (its draft model, its context, its projector). With the
    ``model``, its projector as ``options`` choose it (``LoadOptions.projector_for``)."""
    config = options.apply(LoadConfig(model_path=NO_MODEL))
    if model is not None:
        config = dataclasses.replace(config, mmproj_path=options.projector_for(model))
    fields: dict[str, Any] = {}
    for field in dataclasses.fields(LoadConfig):
        if field.name == "model_path":
            continue
        value = getattr(config, field.name)
        if isinstance(value, Enum):
            value = value.value
        elif isinstance(value, Path):
            value = str(value)
        elif isinstance(value, tuple):
            value = list(value)
        fields[field.name] = value
    return fields


def same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b


def find_loaded(models: tuple[LoadedModel, ...], path: Path) -> LoadedModel | None:
    """The loaded model whose file is ``path``, if any."""
    return next((m for m in models if same_file(m.info.path, path)), None)


async def load_beside(
    client: WorkerClient,
    path: Path,
    options: LoadOptions,
    *,
    replace: bool,
    on_progress: Callable[[float | None], None] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> LoadedModel:
    """Load the library model at ``path`` into the running worker (alongside the others,
    or with ``replace`` instead of them) and return it once loaded. A failure is a
    ModelLoadError with the worker's message; cancelling cancels the worker's load."""
    await client.load(str(path), replace=replace, settings=load_fields(options, path))
    deadline = time.monotonic() + timeout
    try:
        while True:
            loaded = find_loaded((await client.residency()).models, path)
            if loaded is not None:
                return loaded
            health = await client.health()
            failure = health.error if health.status == "error" else health.load_error
            if health.status == "error" or failure is not None:
                raise ModelLoadError(failure or f"The worker could not load {path.name}.")
            if on_progress is not None:
                on_progress(health.loading)  # beside serving models /health is 200
            if time.monotonic() > deadline:
                raise ModelLoadError(
                    f"{path.name} did not load within {timeout:g} s. It may be too large "
                    "for the memory left beside the loaded models."
                )
            await asyncio.sleep(POLL_S)
    except asyncio.CancelledError:
        try:
            await asyncio.shield(client.cancel_load())
        except Exception as exc:  # the worker may be gone: nothing left to cancel
            log.info("could not cancel the load of %s: %s", path.name, exc)
        raise
