"""A method is built in one statement (issue 39, item 2a): its parts (`MethodParts`) go to
the constructor at once and a `setup` hook finishes it; its options are validated once
per build and never per check; its label space comes from the run as an object, and its
default is declared once, on its class."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from pydantic import model_validator
from typer.testing import CliRunner

from veracity.cli import app
from veracity.core import registry
from veracity.core.config import RunConfig
from veracity.core.errors import ConfigError
from veracity.core.labels import get_label_space
from veracity.core.limits import InputLimits
from veracity.core.types import Claim
from veracity.methods.base import BaseMethod, MethodConfig, MethodParts
from veracity.prompting import PromptBundle
from veracity.retrieval.defaults import SourceNeed
from veracity.runtime import CachePaths, build_run, resolve_spec
from veracity.runtime.record import read_record
from veracity.runtime.service import Veracity
from veracity.testing import ScriptedLLM

OLD_RUN = Path(__file__).parents[1] / "data" / "stored" / "direct_old_events"
VALIDATIONS: list[dict] = []


class CountedConfig(MethodConfig):
    """Counts every validation of a method config, whatever the road (model_validate,
    the constructor, a dump validated again)."""

    search: bool = False
    rounds: int = 1

    @model_validator(mode="before")
    @classmethod
    def _count(cls, data):
        VALIDATIONS.append(dict(data) if isinstance(data, dict) else {"?": data})
        return data


class CountedMethod(BaseMethod):
    """Searches only when asked (`search`), so its source needs read its config, as those
    of the retrieving methods do."""

    name = "counted_demo"
    config_class = CountedConfig
    default_labels = "real_fake"
    prepared = 0

    def setup(self) -> None:
        super().setup()
        self.prepared += 1

    @classmethod
    def source_needs(cls, config):
        cfg = cls.parse_config(config)
        return [SourceNeed("web")] if cfg is not None and cfg.search else []

    async def run(self, item, ctx):
        return self.verdict(label="REAL")


@pytest.fixture
def counted(monkeypatch):
    monkeypatch.setitem(registry.methods._items, CountedMethod.name, CountedMethod)
    VALIDATIONS.clear()
    return VALIDATIONS


async def test_options_are_validated_once_per_build_and_never_per_check(counted):
    # no sources given: the default-sources step reads the spec's validated options
    spec = resolve_spec(RunConfig(method=CountedMethod.name, method_config={"rounds": 2}))
    assert len(counted) == 1, counted
    run = build_run(spec, llm=ScriptedLLM())
    assert len(counted) == 1, counted  # the method took the spec's validated object
    assert run.method.config is spec.method_config
    for _ in range(3):
        assert (await run.check(Claim(text="x"))).label == "REAL"
    assert len(counted) == 1, counted


async def test_a_service_validates_the_options_once_for_all_its_checks(counted):
    service = Veracity(RunConfig(method=CountedMethod.name, method_config={"rounds": 2}),
                       llm=ScriptedLLM())  # fmt: skip
    for n in range(3):
        assert (await service.check(f"claim {n}")).label == "REAL"
    assert len(counted) == 1, counted  # 10 before: 4 for the first check, 3 for each other


async def test_a_method_built_from_keywords_validates_once_and_never_per_check(counted):
    method = CountedMethod(llm=ScriptedLLM(), config={"rounds": 3})
    assert len(counted) == 1 and method.config.rounds == 3
    for _ in range(3):
        await method.check(Claim(text="x"))
    assert len(counted) == 1, counted
    # a validated config of the method's class is taken as it is
    again = CountedMethod(llm=ScriptedLLM(), config=method.config)
    assert again.config is method.config and len(counted) == 1


def test_the_runtime_builds_a_method_in_one_statement_from_its_parts(counted, tmp_path):
    spec = resolve_spec(
        RunConfig(
            method=CountedMethod.name,
            labels="true_false",
            limits={"text_chars": 500},
        )
    )
    caches = CachePaths(state=tmp_path / "state", namespace="set/split")
    run = build_run(spec, llm=ScriptedLLM(), caches=caches)
    method = run.method
    assert isinstance(method.parts, MethodParts) and method.prepared == 1  # setup ran once
    assert method.label_space is get_label_space("true_false")
    assert method.parts.config is spec.method_config
    assert method.limits == InputLimits(text_chars=500)
    assert (method.state_dir, method.state_namespace) == (tmp_path / "state", "set/split")
    assert method.model_builder is not None and method.home is not None
    assert method.setup_notes == list(spec.notes)


def test_keywords_fill_the_same_bundle():
    notes = ("defaults were chosen",)
    method = CountedMethod(
        llm=ScriptedLLM(), labels="true_false", limits=InputLimits(text_chars=900), notes=notes
    )
    assert method.parts.labels is get_label_space("true_false")
    assert method.label_space is method.parts.labels and method.setup_notes == list(notes)
    assert method.limits.text_chars == 900 and method.prepared == 1
    assert CountedMethod(llm=ScriptedLLM()).label_space.name == "real_fake"  # its default
    with pytest.raises(TypeError, match="no part named mdoels"):
        CountedMethod(llm=ScriptedLLM(), mdoels=object())
    with pytest.raises(TypeError, match="parts= alone"):
        CountedMethod(ScriptedLLM(), parts=method.parts)
    prompts = PromptBundle((("nope.j2", "x"),))
    with pytest.raises(Exception, match=r"no such template|no prompts package"):
        CountedMethod(llm=ScriptedLLM(), prompts=prompts)


def test_no_setters_and_no_method_redeclares_the_constructor():
    for setter in ("use_prompts", "use_models", "use_state", "use_limits"):
        assert not hasattr(BaseMethod, setter), setter
    redeclared = []
    for name in registry.methods.names():
        for cls in registry.methods.get(name).__mro__:
            if cls is not BaseMethod and "__init__" in vars(cls) and issubclass(cls, BaseMethod):
                redeclared.append(f"{name}: {cls.__qualname__}")
    assert redeclared == []


def test_a_methods_default_label_space_is_declared_once():
    for name in registry.methods.names():
        cls = registry.methods.get(name)
        assert "labels" not in cls.config_class.model_fields, name
        spec = resolve_spec(RunConfig(method=name, sources={"x": {"type": "recorded"}}))
        assert spec.labels == cls.default_labels, name


def test_a_label_space_inside_method_config_is_refused_saying_where_it_goes():
    cases = [
        RunConfig(method="direct", method_config={"labels": "real_fake"}),
        RunConfig(method="direct", labels="real_fake", method_config={"labels": "real_fake"}),
        RunConfig.model_validate(
            {"method": "direct", "variants": {"v": {"method_config": {"labels": "real_fake"}}}}
        ).with_variant("v"),
    ]
    for config in cases:
        with pytest.raises(
            ConfigError, match=r"not a method option: give it as the run's `labels:`"
        ):
            resolve_spec(config)
    # the run's own `labels` is the one home, and reaches the method as an object
    run = build_run(resolve_spec(RunConfig(method="direct", labels="real_fake")), llm=ScriptedLLM())
    assert run.method.label_space is get_label_space("real_fake")
    assert "labels" not in run.spec.model_dump(mode="json")["method_config"]


def test_a_run_directory_that_kept_its_labels_in_method_config_still_reports(tmp_path):
    """Runs made before the label space had one home wrote it into ``method_config``."""
    run_dir = Path(shutil.copytree(OLD_RUN, tmp_path / "run"))
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    config["method_config"] = {"labels": config.pop("labels")}
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config))
    record = read_record(run_dir)
    assert record.config["labels"] == "supported_refuted"
    assert "labels" not in record.config["method_config"]
    result = CliRunner().invoke(app, ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
