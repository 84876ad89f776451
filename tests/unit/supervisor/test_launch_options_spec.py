"""The Load dialog's speculation choices, as ``LoadOptions`` put them into a load and
into the worker's argv."""

from __future__ import annotations

from pathlib import Path

from hearth.config.launch import LaunchSettings
from hearth.core.model_info import LoadConfig, SpecMode
from hearth.supervisor import LoadOptions

TARGET = Path("/models/target.gguf")
DRAFT = "/models/draft.gguf"


def loaded(options: LoadOptions, base: LoadConfig | None = None) -> LoadConfig:
    return options.apply(base or LoadConfig(model_path=TARGET))


def test_a_draft_model_reaches_the_workers_argv() -> None:
    load = loaded(LoadOptions(spec_mode="draft", draft_model=DRAFT, draft_max=8))
    assert (load.speculation, load.draft_model_path, load.draft_max) == (
        SpecMode.DRAFT, Path(DRAFT), 8,
    )  # fmt: skip
    assert load.problems() == []
    argv = LaunchSettings(load=load).to_argv()
    assert argv[argv.index("--draft-model") + 1] == DRAFT
    assert argv[argv.index("--spec") + 1] == "draft"
    assert argv[argv.index("--draft-max") + 1] == "8"


def test_ngram_and_off_never_keep_a_draft_model() -> None:
    with_draft = LoadConfig(model_path=TARGET, draft_model_path=Path(DRAFT))
    ngram = loaded(LoadOptions(spec_mode="ngram", draft_model=DRAFT, draft_max=4), with_draft)
    assert (ngram.speculation, ngram.draft_model_path) == (SpecMode.NGRAM, None)
    off = loaded(LoadOptions(spec_mode="off"), with_draft)
    assert (off.speculation, off.draft_model_path) == (SpecMode.OFF, None)
    assert "--draft-model" not in LaunchSettings(load=off).to_argv()


def test_a_small_draft_max_pulls_draft_min_down_with_it() -> None:
    base = LoadConfig(model_path=TARGET, draft_min=4)
    load = loaded(LoadOptions(spec_mode="ngram", draft_max=2), base)
    assert (load.draft_min, load.draft_max) == (2, 2) and load.problems() == []


def test_no_choice_leaves_the_workers_defaults() -> None:
    load = loaded(LoadOptions())
    default = LoadConfig(model_path=TARGET)
    assert (load.spec_mode, load.draft_model_path, load.draft_max) == (
        default.spec_mode, None, default.draft_max,
    )  # fmt: skip
