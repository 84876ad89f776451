"""LaunchSettings: the one definition of the worker's launch settings round-trips argv."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from hearth.cli import build_parser
from hearth.cli.serve import worker_parser
from hearth.config.launch import DEFAULT_PORT, LaunchSettings, add_launch_arguments
from hearth.core.model_info import (
    CHAT_FORMATS,
    FlashAttention,
    LoadConfig,
    SpecMode,
    SplitMode,
)
from hearth.core.prompt_cache import GIB, PromptCacheSettings
from hearth.core.residency import ResidencySettings
from hearth.engine.tool_formats import REGISTRY, ToolFormat

EVERYTHING = LaunchSettings(
    load=LoadConfig(
        model_path=Path("/models/a b/model.gguf"),
        n_ctx=1024,
        n_parallel=3,
        n_gpu_layers=7,
        main_gpu=1,
        split_mode=SplitMode.ROW,
        tensor_split=(3.0, 1.5, 0.1),
        n_threads=5,
        n_threads_batch=6,
        n_batch=256,
        n_ubatch=128,
        flash_attention=FlashAttention.OFF,
        cache_type_k="q8_0",
        cache_type_v="q4_0",
        use_mmap=False,
        use_mlock=True,
        kv_unified=True,
        max_queue=9,
        draft_model_path=Path("/models/draft.gguf"),
        spec_mode=SpecMode.DRAFT,
        draft_max=8,
        draft_min=2,
        chat_format="qwen3_coder",
    ),
    host="0.0.0.0",
    port=9000,
    endpoint_open=False,
    require_key=True,
    stored_keys=False,
    api_keys=("k1", "k2"),
    cors_origins=("http://localhost:3000",),
    jit=False,
    ttl_s=12.5,
    parent_pid=4242,
    prompt_cache=PromptCacheSettings(Path("/caches/kv here"), max_bytes=GIB + 5, min_tokens=77),
    residency=ResidencySettings(
        max_models=5, memory_budget_bytes=12 * GIB + 7, jit_ttl_s=90.5, load_queue_timeout_s=2.5
    ),
)


def _parse(argv: list[str]) -> LaunchSettings:
    parser = argparse.ArgumentParser()
    add_launch_arguments(parser)
    return LaunchSettings.from_args(parser.parse_args(argv))


@pytest.mark.parametrize(
    "settings",
    [
        LaunchSettings(),
        EVERYTHING,
        LaunchSettings(require_key=False, port=0),
        LaunchSettings(load=LoadConfig(model_path=Path("/m.gguf"), n_gpu_layers=0)),
        LaunchSettings(load=LoadConfig(model_path=Path("/m.gguf"), spec_mode=SpecMode.OFF)),
        LaunchSettings(prompt_cache=PromptCacheSettings(folder=None)),
        LaunchSettings(prompt_cache=PromptCacheSettings(Path("/c"), max_bytes=1234567)),
        LaunchSettings(residency=ResidencySettings(max_models=1, jit_ttl_s=None)),
    ],
    ids=[
        "defaults", "everything", "no-require-key", "cpu-only", "no-speculation",
        "no-prompt-cache", "odd-cache-budget", "one-model-kept",
    ],
)
def test_settings_argv_parse_round_trip(settings: LaunchSettings) -> None:
    assert _parse(settings.to_argv()) == settings
    # The worker's and the serve verb's parsers are built from the same definition.
    assert LaunchSettings.from_args(worker_parser().parse_args(settings.to_argv())) == settings
    serve = build_parser().parse_args(["serve", *settings.to_argv()])
    assert LaunchSettings.from_args(serve) == settings


def test_defaults_match_the_parsers_defaults() -> None:
    assert _parse([]) == LaunchSettings()
    assert LaunchSettings().port == DEFAULT_PORT
    assert not LaunchSettings().has_model
    assert LaunchSettings.from_args(worker_parser().parse_args([])).port == 0


def test_argv_always_names_host_and_port_and_carries_no_worker_token() -> None:
    argv = LaunchSettings().to_argv()
    assert argv[:4] == ["--host", "127.0.0.1", "--port", str(DEFAULT_PORT)]
    assert "--api-key" not in argv and "--model" not in argv


def test_chat_format_choices_are_the_engine_registry() -> None:
    assert set(CHAT_FORMATS) == {fmt.value for fmt in ToolFormat}
    assert set(CHAT_FORMATS) == {spec.fmt.value for spec in REGISTRY}


def test_an_unknown_chat_format_exits_2_listing_the_valid_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["serve", "--chat-format", "qwen9"])
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert "--chat-format" in error and "'qwen9'" in error
    assert all(name in error for name in CHAT_FORMATS)


def test_serve_help_lists_the_chat_formats(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--chat-format NAME" in help_text
    assert all(name in help_text for name in CHAT_FORMATS)


def test_load_config_refuses_an_unknown_chat_format() -> None:
    """POST /hearth/v1/load takes LoadConfig's fields by name; problems() is its check."""
    bad = LoadConfig(model_path=Path("/m.gguf"), chat_format="qwen9")
    assert any("chat_format must be one of" in p for p in bad.problems())
    assert LoadConfig(model_path=Path("/m.gguf"), chat_format="glm").problems() == []


def test_speculation_settings_are_checked_with_flag_names() -> None:
    from hearth.server.options import _as_flags

    load = LoadConfig(model_path=Path("/m.gguf"), spec_mode=SpecMode.DRAFT, draft_min=20)
    problems = [_as_flags(p) for p in load.problems()]
    assert "--draft-min must be at least 1, and --draft-max at least --draft-min." in problems
    assert "--spec draft needs a --draft-model." in problems
    assert LoadConfig(model_path=Path("/m.gguf")).problems() == []


def test_the_prompt_cache_is_on_by_default_in_the_data_folder(tmp_path: Path) -> None:
    cache = _parse([]).prompt_cache
    assert cache.folder is not None and cache.folder.name == "prompt-cache"
    assert cache.max_bytes is None and cache.min_tokens == 1024
    assert _parse(["--prompt-cache", "off"]).prompt_cache.folder is None
    assert "--prompt-cache" not in LaunchSettings().to_argv()  # the app's worker: same default


@pytest.mark.parametrize("argv", [["--prompt-cache-max", "-1"], ["--prompt-cache-max", "x"],
                                  ["--prompt-cache-min-tokens", "0"]])  # fmt: skip
def test_bad_prompt_cache_flags_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        _parse(argv)
    assert exited.value.code == 2


@pytest.mark.parametrize(
    "argv", [["--max-models", "0"], ["--memory-budget", "-1"], ["--jit-ttl", "soon"],
             ["--load-queue-timeout", "-5"]],
)  # fmt: skip
def test_bad_residency_flags_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        _parse(argv)
    assert exited.value.code == 2
