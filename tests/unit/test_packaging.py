"""The installers' configuration, checked by Briefcase's own parser."""

from __future__ import annotations

import configparser
import plistlib
from pathlib import Path

import pytest
from briefcase.config import parse_config
from briefcase.console import Console

ROOT = Path(__file__).resolve().parents[2]
TARGETS = [("macOS", "app"), ("windows", "app"), ("linux", "system"),
           ("linux", "appimage"), ("linux", "flatpak")]  # fmt: skip


@pytest.mark.parametrize(("platform", "output_format"), TARGETS)
def test_briefcase_parses_every_target(platform, output_format):
    _, apps = parse_config(ROOT / "pyproject.toml", platform, output_format, Console())
    app = apps["hearth"]
    assert app["sources"] == ["app/hearth"]
    assert (ROOT / "app" / "hearth" / "__main__.py").exists()
    requires = " ".join(app["requires"])
    assert "llama-cpp-python==" in requires and "PySide6-Essentials" in requires
    assert len(app["requires"]) == len(set(app["requires"]))  # listed once
    assert app["requirement_installer_args"] == ["--find-links", "./installers/wheels"]
    assert app["test_sources"] == ["tests"] and (ROOT / "tests" / "hearth.py").exists()


def test_icons_exist_in_every_format():
    for suffix in ("png", "icns", "ico"):
        assert (ROOT / "resources" / f"icon.{suffix}").stat().st_size > 1000
    for size in (16, 32, 64, 128, 256, 512):
        assert (ROOT / "resources" / f"icon-{size}.png").exists()
    assert (ROOT / "app" / "hearth" / "ui" / "resources" / "icon.png").exists()


def test_linux_desktop_file_and_macos_entitlements():
    desktop = configparser.ConfigParser(interpolation=None)
    desktop.read(ROOT / "installers" / "linux" / "org.hearth.hearth.desktop")
    entry = desktop["Desktop Entry"]
    assert entry["Exec"].startswith("hearth") and entry["Type"] == "Application"
    assert "application/x-gguf" in entry["MimeType"]
    plist = plistlib.loads((ROOT / "installers" / "macos" / "Entitlements.plist").read_bytes())
    _, apps = parse_config(ROOT / "pyproject.toml", "macOS", "app", Console())
    assert set(plist) == set(apps["hearth"]["entitlement"])
