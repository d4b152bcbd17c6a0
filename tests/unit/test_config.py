import pytest

from veracity.core.config import ConfigError, LLMConfig, load_run_config
from veracity.core.registry import Registry, RegistryError
from veracity.runtime import layered_config, resolve_spec
from veracity.runtime.environment import data_dir, default_data_dir, environment


def test_settings_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("VERACITY_HOME", str(tmp_path))
    monkeypatch.setenv("VERACITY_LLM", "openai")
    monkeypatch.setenv("VERACITY_MODEL", "gpt-4o-mini")
    s = environment()
    assert s.home == tmp_path and s.llm == "openai" and s.model == "gpt-4o-mini"
    assert s.paths.llm_cache == tmp_path / "cache" / "llm.sqlite"


def test_the_environments_endpoint_selects_the_endpoint_backend(monkeypatch):
    monkeypatch.setenv("VERACITY_BASE_URL", "http://localhost:8000/v1")
    cfg = layered_config(flags={"llm": {"model": "qwen"}}).llm
    assert cfg.backend == "openai" and cfg.model == "qwen" and cfg.base_url.endswith("/v1")
    # below the composition root a config is only what it was given
    assert LLMConfig().backend == "embedded" and LLMConfig.layered({}, {}).base_url is None


def test_offline_is_read_in_one_place_as_before(monkeypatch):
    for value, expected in (("1", True), (" TRUE ", True), ("yes", True), ("0", False),
                            ("on", False), ("", False)):  # fmt: skip
        monkeypatch.setenv("VERACITY_OFFLINE", value)
        assert environment().offline is expected, value
    monkeypatch.delenv("VERACITY_OFFLINE")
    assert environment().offline is False


def test_run_config_rejects_typos(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("method: cot\nllm:\n  backend: embedded\n  modle: x\n")
    with pytest.raises(ConfigError, match="modle"):
        load_run_config(path)
    path.write_text("method: cot\nmethod_config:\n  labels: real_fake\n")
    cfg = load_run_config(path, limit=5)
    assert cfg.method == "cot" and cfg.limit == 5
    # the label space lives in one place, the run's: as a method option it is refused when
    # the run is resolved, saying where it goes
    with pytest.raises(ConfigError, match=r"label space is not a method option.*--labels"):
        resolve_spec(path)
    with pytest.raises(ConfigError, match="not found"):
        load_run_config(tmp_path / "missing.yaml")
    path.write_text("- a list\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_run_config(path)


def test_data_dir_explicit_and_missing(tmp_path, monkeypatch):
    assert data_dir(tmp_path) == tmp_path
    monkeypatch.setenv("VERACITY_DATA_DIR", str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match="VERACITY_DATA_DIR"):
        data_dir()


def test_data_dir_defaults_to_the_home_and_never_looks_beside_the_checkout(
    tmp_path, monkeypatch, _isolated_home
):
    # our own layout keeps a data folder beside the checkout; a user's machine has none,
    # and the product must not find one there either
    sibling = tmp_path / "work" / ("sha" + "red") / "data"
    sibling.mkdir(parents=True)
    (tmp_path / "work" / "checkout").mkdir()
    monkeypatch.chdir(tmp_path / "work" / "checkout")
    monkeypatch.delenv("VERACITY_DATA_DIR", raising=False)
    assert default_data_dir() == _isolated_home / "datasets"
    with pytest.raises(ConfigError, match="veracity datasets get NAME") as err:
        data_dir()
    assert str(_isolated_home / "datasets") in str(err.value)
    (_isolated_home / "datasets").mkdir()
    assert data_dir() == _isolated_home / "datasets"


def test_registry_register_and_conflicts():
    reg: Registry = Registry("thing", "veracity.tests.none")
    reg.register("a", 1)
    reg.register("a", 1)  # same object again is fine

    @reg.register("b")
    def b():
        return 2

    assert reg.get("b") is b and reg.names() == ["a", "b"] and "a" in reg
    with pytest.raises(RegistryError, match="already registered"):
        reg.register("a", 2)
    with pytest.raises(RegistryError, match="available: a, b"):
        reg.get("c")
