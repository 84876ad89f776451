"""Fetch llama.cpp's real chat templates (models/templates/*.jinja) for the corpus tests.

They come from the llama-cpp-python sdist the project installs, so the corpus moves with
the pin. The sdist is downloaded with pip once and only the templates are kept, under
~/.cache/hearth-test/; offline runs without that cache skip with the reason.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tempfile
from importlib.metadata import version
from pathlib import Path

import pytest

CACHE = Path.home() / ".cache" / "hearth-test"
MARKER = "/vendor/llama.cpp/models/templates/"

# The constructs of llama.cpp's own Phi-4-mini template
# (models/templates/llama-cpp-microsoft-Phi-4-mini-instruct.jinja), which the pinned
# sdist does not carry: ``tools is defined`` decides the system turn, and the loops over
# ``tools`` and ``message.tool_calls`` are unguarded.
PHI4_MINI = "llama-cpp-microsoft-Phi-4-mini-instruct.jinja"
PHI4_MINI_LIKE = (
    "{%- if messages[0]['role'] == 'system' %}{% set system_message = messages[0]['content'] %}"
    "{% elif tools is defined %}{% set system_message = '' %}{% endif %}"
    "{%- if system_message is defined %}<|system|>{{ system_message }}"
    "{%- if tools is defined %}{% for tool in tools %}<|tool|>{{ tool['function'] | tojson }}"
    "<|/tool|>{% endfor %}{% endif %}<|end|>{% endif %}"
    "{%- for message in messages %}{% if message['role'] != 'system' %}"
    "<|{{ message['role'] }}|>{% if message.content %}{{ message['content'] }}{% endif %}"
    "{%- for tool_call in message.tool_calls %}<|tool_call|>{{ tool_call['function'] | tojson }}"
    "<|/tool_call|>{% endfor %}<|end|>{% endif %}{% endfor %}"
    "{%- if add_generation_prompt %}<|assistant|>{% endif %}"
)
STAND_INS = {PHI4_MINI: PHI4_MINI_LIKE}


def template_text(folder: Path, name: str) -> str:
    """A corpus template's text, or its stand-in where this llama.cpp lacks the file."""
    path = folder / name
    if path.is_file() or name not in STAND_INS:
        return path.read_text(encoding="utf-8")
    return STAND_INS[name]


def fetch_templates() -> Path:
    pinned = version("llama-cpp-python")
    target = CACHE / f"llama-cpp-python-{pinned}-templates"
    if target.is_dir() and any(target.glob("*.jinja")):
        return target
    sdist_dir = CACHE / "sdist"
    sdist = sdist_dir / f"llama_cpp_python-{pinned}.tar.gz"
    if not sdist.is_file():
        sdist_dir.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                   f"llama-cpp-python=={pinned}", "-d", str(sdist_dir)]  # fmt: skip
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"cannot download the llama-cpp-python {pinned} sdist: {exc}")
        if done.returncode != 0 or not sdist.is_file():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
            pytest.skip(f"cannot download the llama-cpp-python {pinned} sdist: {tail}")
    CACHE.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="templates-", dir=CACHE))
    with tarfile.open(sdist) as archive:
        for member in archive.getmembers():
            if member.isfile() and MARKER in member.name and member.name.endswith(".jinja"):
                source = archive.extractfile(member)
                if source is not None:
                    (staging / Path(member.name).name).write_bytes(source.read())
    try:
        staging.rename(target)
    except OSError:  # another run got there first; its copy is the same
        shutil.rmtree(staging, ignore_errors=True)
    return target
