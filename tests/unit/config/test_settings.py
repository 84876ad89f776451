import json

from hearth.config.paths import default_paths
from hearth.config.settings import SCHEMA_VERSION, Settings, load_settings, save_settings


def test_paths_follow_env_overrides(tmp_path, monkeypatch):
    monkeypatch.setenv("HEARTH_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.setenv("HEARTH_CONFIG_DIR", str(tmp_path / "c"))
    paths = default_paths().ensure()
    assert paths.models_dir == tmp_path / "d" / "models"
    assert paths.models_dir.is_dir() and paths.config_dir.is_dir()


def test_round_trip_keeps_unknown_keys(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"schema_version": 1, "context_size": 8192, "future_key": 3}))
    settings = load_settings(path)
    assert settings.context_size == 8192
    settings.remember_model(tmp_path / "a.gguf")
    settings.remember_model(tmp_path / "b.gguf")
    settings.remember_model(tmp_path / "a.gguf")
    save_settings(settings, path)
    raw = json.loads(path.read_text())
    assert raw["future_key"] == 3
    assert raw["schema_version"] == SCHEMA_VERSION
    assert raw["recent_models"] == [str(tmp_path / "a.gguf"), str(tmp_path / "b.gguf")]


def test_corrupt_file_is_set_aside_not_lost(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text("{broken")
    assert load_settings(path) == Settings()
    assert (tmp_path / "settings.corrupt.json").read_text() == "{broken"
