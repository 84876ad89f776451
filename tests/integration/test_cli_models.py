"""hearth ls / import / fit / quantize / rm, run as a user would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys


def hearth(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hearth", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env or dict(os.environ),
    )


def test_import_ls_fit_rm(tiny_model_q8, tmp_path):
    assert "No models yet" in hearth("ls").stdout
    imported = hearth("import", str(tiny_model_q8))
    assert imported.returncode == 0, imported.stderr
    rows = json.loads(hearth("ls", "--json").stdout)
    assert [(r["id"], r["quantization"], r["source"]) for r in rows] == [
        ("hearth-tiny-Q8_0.gguf", "Q8_0", "imported")
    ]
    assert rows[0]["path"] == str(tiny_model_q8)  # in place: nothing copied
    fit = hearth("fit", "hearth-tiny-Q8_0", "--ctx", "1024")
    assert fit.returncode == 0 and "CPU only" in fit.stdout and "MiB" in fit.stdout
    assert hearth("rm", "hearth-tiny-Q8_0").returncode == 0
    assert tiny_model_q8.exists()  # an in-place import is only forgotten
    assert json.loads(hearth("ls", "--json").stdout) == []
    missing = hearth("rm", "nothing-here")
    assert missing.returncode == 1 and "hearth ls" in missing.stderr


def test_import_folder_and_other_apps(tiny_model_q8, tmp_path):
    folder = tmp_path / "my-models"
    folder.mkdir()
    shutil.copy(tiny_model_q8, folder / "a.gguf")
    (folder / "broken.gguf").write_bytes(b"GGUF\x03\x00\x00\x00garbage")
    assert "2 model(s)" in hearth("import", str(folder)).stdout
    listing = hearth("ls").stdout
    assert "a.gguf" in listing and "broken.gguf" in listing and "!" in listing

    home = tmp_path / "home"
    lms = home / ".lmstudio" / "models" / "someone" / "repo"
    lms.mkdir(parents=True)
    shutil.copy(tiny_model_q8, lms / "model-Q8_0.gguf")
    env = dict(os.environ, HOME=str(home))
    found = hearth("import", "--from-apps", env=env)
    assert found.returncode == 0, found.stderr
    assert "lmstudio" in found.stdout
    ids = [r["path"] for r in json.loads(hearth("ls", "--json", env=env).stdout)]
    assert str(lms / "model-Q8_0.gguf") in ids


def test_quantize_verb(tiny_model_f16, tmp_path):
    out = tmp_path / "tiny-q4.gguf"
    result = hearth("quantize", str(tiny_model_f16), "Q4_K_M", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size < tiny_model_f16.stat().st_size
    assert "100.0%" in result.stderr
    fit = hearth("fit", str(out))
    assert fit.returncode == 0
    again = hearth("quantize", str(tiny_model_f16), "Q4_K_M", "-o", str(out))
    assert again.returncode == 1 and "exists" in again.stderr
