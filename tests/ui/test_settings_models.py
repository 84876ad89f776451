"""Settings → Models: the values persist, reach the next worker's launch flags, and
Clear empties the prompt cache folder (its saved states written by the real store),
with the count shown before and after."""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from hearth.config.launch import LaunchSettings, add_launch_arguments
from hearth.config.settings import load_settings
from hearth.core.prompt_cache import GIB
from hearth.engine.prompt_store import BLOCK_TOKENS, PromptStore, block_chain
from hearth.supervisor import Supervisor
from hearth.ui.app_settings import SettingsStore
from hearth.ui.pages.settings.models_box import ModelsBox

pytestmark = pytest.mark.ui

KEY = bytes(range(16))


def save_states(folder: Path, count: int) -> list[Path]:
    """``count`` saved states, written as a worker writes them (``PromptStore.write``)."""
    folder.mkdir(parents=True, exist_ok=True)
    store = PromptStore(folder, budget=GIB)
    rng = random.Random(7)
    paths = []
    for _ in range(count):
        tokens = [rng.randrange(1, 250) for _ in range(2 * BLOCK_TOKENS)]
        name = block_chain(KEY, tokens)[-1]
        assert store.write(name, KEY, tokens, memoryview(bytes(4096)))
        paths.append(store.path_for(name))
    return paths


def reparsed(settings: LaunchSettings) -> LaunchSettings:
    parser = argparse.ArgumentParser()
    add_launch_arguments(parser)
    return LaunchSettings.from_args(parser.parse_args(settings.to_argv()))


def test_values_persist_and_reach_the_worker_launch(
    qtbot: QtBot, arun, tmp_path: Path
) -> None:
    store = SettingsStore(tmp_path / "settings.json")
    box = ModelsBox(store)
    qtbot.addWidget(box)
    supervisor = Supervisor()
    box.changed.connect(lambda options: setattr(supervisor, "worker_options", options))
    folder = tmp_path / "my-cache"

    box.max_models_spin.setValue(2)
    box.budget_spin.setValue(6.5)
    box.ttl_spin.setValue(3)
    box.cache_max_spin.setValue(1.5)
    arun(box.set_folder(folder))

    saved = load_settings(store.path)
    assert (saved.max_models, saved.memory_budget_gib, saved.jit_ttl_minutes) == (2, 6.5, 3.0)
    assert (saved.prompt_cache_folder, saved.prompt_cache_max_gib) == (str(folder), 1.5)
    argv = supervisor.launch_settings().to_argv()
    assert argv[argv.index("--max-models") + 1] == "2"
    assert argv[argv.index("--memory-budget") + 1] == "6.5"
    assert argv[argv.index("--jit-ttl") + 1] == "180.0"
    assert argv[argv.index("--prompt-cache") + 1] == str(folder)
    assert argv[argv.index("--prompt-cache-max") + 1] == "1.5"
    back = reparsed(supervisor.launch_settings())
    assert back.residency.max_models == 2
    assert back.residency.memory_budget_bytes == round(6.5 * GIB)
    assert back.residency.jit_ttl_s == 180.0
    assert back.prompt_cache.folder == folder
    assert back.prompt_cache.max_bytes == round(1.5 * GIB)

    box.cache_switch.setChecked(False)
    assert not box.cache_max_spin.isEnabled() and not box.choose_button.isEnabled()
    argv = supervisor.launch_settings().to_argv()
    assert argv[argv.index("--prompt-cache") + 1] == "off"

    # A new page (the next launch of the app) shows what was saved.
    again = ModelsBox(SettingsStore(store.path))
    qtbot.addWidget(again)
    assert again.max_models_spin.value() == 2
    assert again.budget_spin.value() == 6.5
    assert again.folder_field.text() == str(folder)
    assert not again.cache_switch.isChecked()


def test_auto_leaves_the_worker_defaults(qtbot: QtBot, tmp_path: Path) -> None:
    box = ModelsBox(SettingsStore(tmp_path / "settings.json"))
    qtbot.addWidget(box)
    assert box.budget_spin.text() == "Auto" and box.cache_max_spin.text() == "Auto"
    argv = box.options().apply(LaunchSettings()).to_argv()
    for flag in ("--max-models", "--memory-budget", "--jit-ttl", "--prompt-cache",
                 "--prompt-cache-max"):  # fmt: skip
        assert flag not in argv


def test_clear_empties_the_folder_and_says_what_it_held(
    qtbot: QtBot, arun, tmp_path: Path
) -> None:
    folder = tmp_path / "cache"
    paths = save_states(folder, 3)
    store = SettingsStore(tmp_path / "settings.json")
    store.settings.prompt_cache_folder = str(folder)
    box = ModelsBox(store)
    qtbot.addWidget(box)
    arun(box.refresh_usage())
    held = sum(p.stat().st_size for p in paths)
    assert box.held_label.text().endswith("in 3 saved prompts")
    assert box.held_label.text().startswith(f"{held / 1024:.1f} KiB")
    assert box.clear_button.isEnabled()

    box.clear_button.click()
    arun(arun.wait_until(lambda: box.held_label.text() == "Empty", what="the clear"))
    assert not any(p.exists() for p in paths)
    assert not box.clear_button.isEnabled()
    assert box.cache_message.text() == "Cleared."
