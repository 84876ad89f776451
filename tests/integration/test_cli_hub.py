"""hearth search / pull against the fake Hub, as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from fake_hub import FakeHub
from keyring_backends.file_keyring import child_env


@pytest.fixture
def hub_env(tiny_model_q8, tiny_model_q4km, tmp_path):
    with FakeHub() as hub:
        hub.add_repo("hearth/tiny-GGUF", {
            "tiny-Q8_0.gguf": tiny_model_q8.read_bytes(),
            "tiny-Q4_K_M.gguf": tiny_model_q4km.read_bytes(),
        })  # fmt: skip
        hub.add_repo("corp/gated-GGUF", {"g-Q8_0.gguf": tiny_model_q8.read_bytes()},
                     gated="manual")  # fmt: skip
        env = dict(
            os.environ,
            HF_ENDPOINT=hub.url,
            HF_HOME=str(tmp_path / "hf"),
            **child_env(tmp_path / "keyring.json"),
        )
        env.pop("HF_TOKEN", None)
        yield hub, env


def hearth(env, *args):
    return subprocess.run([sys.executable, "-m", "hearth", *args], capture_output=True,
                          text=True, timeout=120, env=env)  # fmt: skip


def test_search_list_and_pull(hub_env):
    hub, env = hub_env
    found = hearth(env, "search", "tiny")
    assert found.returncode == 0, found.stderr
    assert "hearth/tiny-GGUF" in found.stdout
    listing = hearth(env, "pull", "hearth/tiny-GGUF", "--list")
    assert "Q8_0" in listing.stdout and "Q4_K_M" in listing.stdout

    pulled = hearth(env, "pull", "hearth/tiny-GGUF:Q8_0", "--ctx", "1024")
    assert pulled.returncode == 0, pulled.stderr
    assert "Fit at 1024 tokens: CPU only" in pulled.stdout
    assert "Downloaded and verified" in pulled.stdout
    models = json.loads(hearth(env, "ls", "--json").stdout)
    assert [(m["id"], m["source"], m["quantization"]) for m in models] == [
        ("hearth/tiny-GGUF/tiny-Q8_0.gguf", "hearth", "Q8_0")
    ]
    # the header was read with a ranged GET before the download began
    ranged = [r for r in hub.file_gets("hearth/tiny-GGUF", "tiny-Q8_0.gguf")
              if (r.headers.get("range") or "").startswith("bytes=0-")]  # fmt: skip
    assert ranged

    again = hearth(env, "pull", "hearth/tiny-GGUF:Q8_0")
    assert again.returncode == 0  # already complete: verified and kept


def test_pull_errors_say_what_to_do(hub_env):
    _, env = hub_env
    missing = hearth(env, "pull", "hearth/tiny-GGUF:Q2_K")
    assert missing.returncode == 1
    assert (
        "Available: Q4_K_M, Q8_0" in missing.stderr or "Available: Q8_0, Q4_K_M" in missing.stderr
    )
    gated = hearth(env, "pull", "corp/gated-GGUF")
    assert gated.returncode == 1
    assert "gated" in gated.stderr and "token" in gated.stderr
    assert "Traceback" not in gated.stderr


def test_login_stores_the_token(hub_env):
    _, env = hub_env
    assert hearth(env, "login", "--token", "hf_secret_value").returncode == 0
    check = subprocess.run(
        [sys.executable, "-c", "from hearth.config.secrets import get_hf_token; "
                               "print(get_hf_token())"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert check.stdout.strip() == "hf_secret_value"
    assert hearth(env, "logout").returncode == 0


def test_pull_without_quant_takes_the_largest_that_fits(hub_env):
    _, env = hub_env
    pulled = hearth(env, "pull", "hearth/tiny-GGUF")
    assert pulled.returncode == 0, pulled.stderr
    assert "hearth/tiny-GGUF Q8_0" in pulled.stdout  # both fit; Q8_0 is the larger
    assert "Note:" not in pulled.stderr  # the header agrees with the file name
