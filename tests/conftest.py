"""Shared pytest fixtures for Hearth's tests."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

# Qt must not look for a display in tests; set before anything imports PySide6.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# Make `import gguf_factory` work from every test folder, with or without __init__.py.
_TESTS_DIR = str(Path(__file__).parent)
if _TESTS_DIR not in sys.path:
    sys.path.append(_TESTS_DIR)  # after site-packages: tests/hearth.py must not shadow hearth

import gguf_factory  # noqa: E402
from remote_testing import REMOTE_KEY, WRONG_KEY, hearth_cli  # noqa: E402
from server_process import ServeProcess, free_port, start_serve  # noqa: E402

# --------------------------------------------------------------------------- test models
# Written once per session (a few MB each) and shared read-only; copy one before altering.


@pytest.fixture(scope="session")
def tiny_models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Session directory that holds the synthesized models."""
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def tiny_model_f16(tiny_models_dir: Path) -> Path:
    """Tiny llama model, F16 weights, seed 0."""
    return gguf_factory.write_tiny_llama(tiny_models_dir / "hearth-tiny-F16.gguf")


@pytest.fixture(scope="session")
def tiny_model_q8(tiny_models_dir: Path, tiny_model_f16: Path) -> Path:
    """The F16 model quantized to Q8_0 by llama.cpp."""
    return gguf_factory.quantize(tiny_model_f16, tiny_models_dir / "hearth-tiny-Q8_0.gguf", "Q8_0")


@pytest.fixture(scope="session")
def tiny_model_q4km(tiny_models_dir: Path, tiny_model_f16: Path) -> Path:
    """The F16 model quantized to Q4_K_M by llama.cpp."""
    return gguf_factory.quantize(
        tiny_model_f16, tiny_models_dir / "hearth-tiny-Q4_K_M.gguf", "Q4_K_M"
    )


# --------------------------------------------------------------------------- isolation
# No test may touch the real user's data or settings.


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point HEARTH_DATA_DIR / HEARTH_CONFIG_DIR at fresh per-test folders."""
    data_dir = tmp_path / "hearth-data"
    config_dir = tmp_path / "hearth-config"
    data_dir.mkdir()
    config_dir.mkdir()
    monkeypatch.setenv("HEARTH_DATA_DIR", str(data_dir))
    monkeypatch.setenv("HEARTH_CONFIG_DIR", str(config_dir))
    # No test may read the developer's real keyring (HF token, API keys).
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")


# --------------------------------------------------------------------------- servers
# A real `hearth serve` subprocess on 127.0.0.1, shared by the API tests.


@pytest.fixture(scope="session")
def serve_q8(tiny_model_q8: Path, tmp_path_factory: pytest.TempPathFactory):
    """``hearth serve`` on the Q8_0 tiny model: 4 slots x 512 tokens, no API key."""
    from server_process import start_serve

    server = start_serve(tiny_model_q8, tmp_path_factory.mktemp("serve-logs"))
    yield server
    server.stop()


# --------------------------------------------------------------------------- chat templates
# The real templates llama.cpp keeps in models/templates/, taken from the llama-cpp-python
# sdist the project pins; downloaded once and cached under ~/.cache/hearth-test/.


@pytest.fixture(scope="session")
def llama_cpp_templates() -> Path:
    """Folder of ``*.jinja`` chat templates from the pinned llama-cpp-python sdist."""
    from llama_cpp_templates import fetch_templates

    return fetch_templates()


# --------------------------------------------------------------------------- infill models


@pytest.fixture(scope="session")
def tiny_model_repo_fim(tiny_models_dir: Path) -> Path:
    """Tiny llama with Qwen2.5-Coder's repository-level FIM tokens as well, F16."""
    return gguf_factory.write_tiny_llama(
        tiny_models_dir / "hearth-tiny-repo-fim-F16.gguf", repo_fim=True
    )


@pytest.fixture(scope="session")
def serve_repo_fim(tiny_model_repo_fim: Path, tmp_path_factory: pytest.TempPathFactory):
    """``hearth serve`` on the repository-FIM tiny model: 2 slots x 1024 tokens."""
    from server_process import start_serve

    server = start_serve(
        tiny_model_repo_fim, tmp_path_factory.mktemp("serve-logs"), ctx=1024, parallel=2
    )
    yield server
    server.stop()


# --------------------------------------------------------------------------- speculative decoding


@pytest.fixture(scope="session")
def spec_models(tiny_models_dir: Path) -> dict[str, Path]:
    """Q8_0 models for speculative decoding: a 16-block ``target`` whose blocks 2-15 are
    dead, its 2-block ``draft`` (agrees by construction), an ``unrelated`` draft (other
    seed, same vocabulary) and a ``mismatched`` one (other vocabulary)."""
    gf, folder = gguf_factory, tiny_models_dir / "spec"
    quiet = gf.non_normal_rows(gf.VOCAB, keep=[gf.BYTE_BASE_ID + ord("\n")])
    target, draft = gf.write_spec_pair(folder, gf.LlamaSpec(n_layer=16), gf.VOCAB, quiet_rows=quiet)
    unrelated = gf.write_llama(folder / "unrelated-F16.gguf", gf.LlamaSpec(), gf.VOCAB,
                               name="Unrelated", seed=7, quiet_rows=quiet)  # fmt: skip
    controls = gf.VOCAB.tokens[gf.IM_START_ID : gf.FIRST_NORMAL_ID]
    other = gf.make_vocab(controls, reversed(gf.VOCAB.tokens[gf.FIRST_NORMAL_ID :]))
    mismatched = gf.write_llama(folder / "mismatched-F16.gguf", gf.LlamaSpec(), other,
                                name="Mismatched", fim=True)  # fmt: skip
    sources = {"target": target, "draft": draft, "unrelated": unrelated, "mismatched": mismatched}
    return {k: gf.quantize(p, p.with_name(f"{k}-Q8_0.gguf"), "Q8_0") for k, p in sources.items()}


# --------------------------------------------------------------------------- coding agents


@pytest.fixture(scope="session")
def agent_bin() -> Path:
    """Folder with the real ``claude`` and ``codex`` (npm, cached); skips without node."""
    from agent_clis import install_agents

    found = install_agents()
    if isinstance(found, str):
        pytest.skip(found)
    return found


@pytest.fixture(scope="session")
def serve_agents(tmp_path_factory: pytest.TempPathFactory):
    """``hearth serve --api-key`` on the scripted model, with the 64k context agents need."""
    from server_process import start_serve

    folder = tmp_path_factory.mktemp("agents")
    model = gguf_factory.write_scripted_llama(folder / "hearth-scripted.gguf")
    server = start_serve(
        model, folder, "--flash-attn", "on", ctx=65536, parallel=1, api_key="agent-test-key"
    )
    yield server
    server.stop()


@pytest.fixture
def file_keyring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A plaintext file keyring under tmp_path, for this process and its children."""
    import keyring
    from keyrings.alt.file import PlaintextKeyring

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyrings.alt.file.PlaintextKeyring")
    previous = keyring.get_keyring()
    keyring.set_keyring(PlaintextKeyring())
    yield
    keyring.set_keyring(previous)


@pytest.fixture
def locked_keyring(monkeypatch: pytest.MonkeyPatch):
    """This process and its children get a keyring that cannot be read
    (``tests/keyring_backends``)."""
    import keyring

    from keyring_backends.locked_keyring import FOLDER, LockedKeyring

    previous = keyring.get_keyring()  # before the variable below names a backend to load
    parts = [FOLDER, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(parts))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "locked_keyring.LockedKeyring")
    keyring.set_keyring(LockedKeyring())
    yield
    keyring.set_keyring(previous)


# --------------------------------------------------------------------------- remote engines


@pytest.fixture(scope="module")
def remote(tiny_model_q8: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    folder = tmp_path_factory.mktemp("remote-engine")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HEARTH_CONFIG_DIR", str(folder / "config"))
        env.setenv("HEARTH_DATA_DIR", str(folder / "data"))
        served = start_serve(tiny_model_q8, folder, api_key=REMOTE_KEY, ctx=1024, parallel=2)
    yield served
    served.stop()


@pytest.fixture(scope="module")
def gateway_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gateway-config")


@pytest.fixture(scope="module")
def gateway(
    remote: ServeProcess, gateway_config: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServeProcess]:
    for name, kind, key in (("oa", "openai", REMOTE_KEY), ("ol", "ollama", REMOTE_KEY),
                            ("bad", "openai", WRONG_KEY)):  # fmt: skip
        url = f"{remote.base_url}/v1" if kind == "openai" else remote.base_url
        added = hearth_cli(gateway_config, "engines", "add", name, url, "--kind", kind,
                           "--api-key-stdin", "--no-probe", stdin=key + "\n")  # fmt: skip
        assert added.returncode == 0, added.stderr
    dead = hearth_cli(gateway_config, "engines", "add", "dead", f"http://127.0.0.1:{free_port()}",
                      "--no-probe")  # fmt: skip
    assert dead.returncode == 0, dead.stderr
    folder = tmp_path_factory.mktemp("gateway")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HEARTH_CONFIG_DIR", str(gateway_config))
        env.setenv("HEARTH_DATA_DIR", str(folder / "data"))
        env.setenv("HEARTH_SECRET_STORE", "file")
        served = start_serve(None, folder)
    yield served
    served.stop()


@pytest.fixture(scope="module")
def remote_model(remote: ServeProcess) -> str:
    """The model's id at the remote engine."""
    response = httpx.get(f"{remote.base_url}/v1/models", headers=remote.headers())
    loaded = [m for m in response.json()["data"] if m["meta"].get("loaded")]
    return str(loaded[0]["id"])
