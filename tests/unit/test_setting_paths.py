"""Issue 39's first figure, kept: the files a ``--model``, a ``--set`` and a ``--labels``
value of ``veracity check`` pass through on their way to the model factory or the method
(`benchmarks/setting_paths.py` says how they are counted). On 549b8cf they were 8, 9 and
8; before the road was reshaped, 10, 10 and 8."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).parents[2] / "benchmarks" / "setting_paths.py"


@pytest.fixture
def roads(monkeypatch, tmp_path):
    spec = importlib.util.spec_from_file_location("setting_paths", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.scripted_embedded(monkeypatch.setattr)
    return {
        name: set(module.trace(*setting, folder=tmp_path).files())
        for name, setting in module.SETTINGS.items()
    }


def test_a_setting_passes_through_few_files(roads):
    # the front end parses it, the service holds the run, the composition root resolves
    # (and builds) it, the config schema layers it, the consumer takes it
    assert roads["--model"] == {
        "cli/check", "core/config", "runtime/service", "runtime/__init__", "llm/factory",
    }  # fmt: skip
    # and the label space is looked up where label spaces live
    assert roads["--labels"] == {
        "cli/check", "core/config", "runtime/service", "runtime/__init__",
        "core/labels/core", "methods/base",
    }  # fmt: skip
    # a method option is also parsed by the shared parser, validated by the method's
    # config class and checked against the model's window (core/bounds)
    assert len(roads["--set"]) <= 8
    assert {"cli/plugins", "runtime/spec", "runtime/rules", "llm/options"}.isdisjoint(
        set().union(*roads.values())
    )
