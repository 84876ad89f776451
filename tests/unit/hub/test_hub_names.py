"""File names from the Hub: quant types, shards, grouping, and untrusted paths."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from hearth.hub.errors import GatedRepoAccessError, HubAccessError, UnsafePathError, access_error
from hearth.hub.names import (
    local_model_path,
    parse_quant,
    parse_shard,
    safe_relative_path,
    validate_repo_id,
)
from hearth.hub.repo import GgufFile, group_gguf_files


@pytest.mark.parametrize(
    ("name", "quant"),
    [
        ("Llama-3.2-1B-Instruct-Q4_K_M.gguf", "Q4_K_M"),
        ("llama-3.2-1b-instruct-q4_k_m.gguf", "Q4_K_M"),
        ("mistral-7b-instruct-v0.2.Q5_K_S.gguf", "Q5_K_S"),
        ("phi-3-mini-4k-instruct-q8_0.gguf", "Q8_0"),
        ("Qwen2.5-Coder-7B-Instruct-IQ4_XS.gguf", "IQ4_XS"),
        ("model-IQ2_XXS.gguf", "IQ2_XXS"),
        ("model-iq3_xs.gguf", "IQ3_XS"),
        ("gemma-2-2b-it-f16.gguf", "F16"),
        ("gemma-2-2b-it-BF16.gguf", "BF16"),
        ("model.fp16.gguf", "F16"),
        ("model-F32.gguf", "F32"),
        ("Q4_K_M/Qwen3-30B-A3B-Q4_K_M-00001-of-00003.gguf", "Q4_K_M"),
        ("Qwen3-8B-UD-Q4_K_XL.gguf", "UD-Q4_K_XL"),
        ("model-Q4_0_4_4.gguf", "Q4_0_4_4"),
        ("gpt-oss-20b-MXFP4.gguf", "MXFP4"),
        ("Q8-model.Q3_K_L.gguf", "Q3_K_L"),
        ("model-Q6_K.gguf", "Q6_K"),
        ("model-Q4_K_M_imatrix.gguf", "Q4_K_M"),
        ("Qwen2-7B-Instruct.gguf", None),
        ("model.gguf", None),
        ("mmproj-model-f16.gguf", "F16"),
        ("notaQ4_K_Mname.gguf", None),
    ],
)
def test_parse_quant(name: str, quant: str | None) -> None:
    assert parse_quant(name) == quant


def test_parse_shard() -> None:
    shard = parse_shard("big-Q8_0-00002-of-00005.gguf")
    assert shard is not None and (shard.base, shard.index, shard.count) == ("big-Q8_0", 2, 5)
    assert parse_shard("BIG-00001-OF-00002.GGUF") is not None  # case-insensitive
    assert parse_shard("big-Q8_0.gguf") is None
    assert parse_shard("big-00006-of-00005.gguf") is None  # index past the count
    assert parse_shard("big-00000-of-00005.gguf") is None


def _file(path: str, size: int | None) -> GgufFile:
    return GgufFile(
        path, size, None, None, parse_quant(path), parse_shard(path.rsplit("/", maxsplit=1)[-1])
    )


def test_group_shards_into_one_model_in_order() -> None:
    files = [
        _file("Q8_0/m-Q8_0-00003-of-00003.gguf", 30),
        _file("m-Q4_K_M.gguf", 7),
        _file("Q8_0/m-Q8_0-00001-of-00003.gguf", 10),
        _file("Q8_0/m-Q8_0-00002-of-00003.gguf", 20),
        _file("Q2_K/m-Q2_K-00001-of-00002.gguf", 5),  # shard 2 missing
    ]
    models = {m.name: m for m in group_gguf_files(files)}
    q8 = models["Q8_0/m-Q8_0"]
    assert q8.is_split and q8.complete and q8.quant == "Q8_0"
    assert q8.paths == tuple(f"Q8_0/m-Q8_0-0000{i}-of-00003.gguf" for i in (1, 2, 3))
    assert q8.total_size == 60
    single = models["m-Q4_K_M"]
    assert not single.is_split and single.total_size == 7 and single.quant == "Q4_K_M"
    broken = models["Q2_K/m-Q2_K"]
    assert broken.is_split and not broken.complete
    assert _file("x-Q4_0.gguf", None).size is None
    assert group_gguf_files([_file("x-Q4_0.gguf", None)])[0].total_size is None


@pytest.mark.parametrize(
    "name", ["model-Q4_K_M.gguf", "Q4_K_M/model-00001-of-00002.gguf", "a/b/c.gguf", "modèle.gguf"]
)
def test_safe_relative_path_accepts_normal_names(name: str) -> None:
    assert safe_relative_path(name) == PurePosixPath(name)


@pytest.mark.parametrize(
    "name",
    [
        "",
        "../model.gguf",
        "a/../../model.gguf",
        "/etc/passwd",
        "a\\..\\b.gguf",
        "C:/Windows/model.gguf",
        "a//b.gguf",
        "./model.gguf",
        "a/.",
        "model.gguf\x00.txt",
        "line\nbreak.gguf",
        "evil\u202egguf.exe",  # right-to-left override
        "zero\u200bwidth.gguf",
        "con.gguf",
        "NUL",
        "trailing-dot.",
        " leading-space.gguf",
        'quote".gguf',
        "star*.gguf",
        "x" * 300 + ".gguf",
    ],
)
def test_safe_relative_path_rejects_untrusted_names(name: str) -> None:
    with pytest.raises(UnsafePathError) as err:
        safe_relative_path(name)
    assert "Refusing" in err.value.message


@pytest.mark.parametrize("repo", ["a/b/c", "noslash", "../x", "a/..", "-a/b", "a/b.", "a /b", ""])
def test_validate_repo_id_rejects(repo: str) -> None:
    with pytest.raises(UnsafePathError):
        validate_repo_id(repo)


def test_local_model_path_stays_inside_models_dir(tmp_path: Path) -> None:
    path = local_model_path(tmp_path, "bartowski/Llama-3.2-1B-GGUF", "sub/m-Q4_K_M.gguf")
    assert path == tmp_path / "bartowski" / "Llama-3.2-1B-GGUF" / "sub" / "m-Q4_K_M.gguf"
    assert path.resolve().is_relative_to(tmp_path.resolve())
    with pytest.raises(UnsafePathError):
        local_model_path(tmp_path, "a/b", "../../../escape.gguf")


def test_access_guidance_messages() -> None:
    no_token = access_error(
        "meta/llama", status=401, error_code="GatedRepo", error_message=None, has_token=False
    )
    assert isinstance(no_token, GatedRepoAccessError)
    assert "Add a Hugging Face token" in no_token.message
    assert "accept the licence at https://huggingface.co/meta/llama" in no_token.message
    not_granted = access_error(
        "meta/llama", status=403, error_code="GatedRepo", error_message=None, has_token=True
    )
    assert isinstance(not_granted, GatedRepoAccessError)
    assert "Accept the licence at https://huggingface.co/meta/llama" in not_granted.message
    bad = access_error(
        "a/b",
        status=401,
        error_code=None,
        error_message="Invalid credentials in Authorization header",
        has_token=True,
    )
    assert isinstance(bad, HubAccessError) and "rejected your token" in bad.message
    private = access_error(
        "a/b", status=401, error_code="RepoNotFound", error_message=None, has_token=False
    )
    assert "add a Hugging Face token" in private.message
