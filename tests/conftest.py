"""Shared test setup.

Every test gets a fresh VERACITY_HOME (caches, indexes) under its tmp dir, so tests never
read or write the user's cache, and VERACITY_OFFLINE=1, so default sources never probe
the network (tests of the online branch fake the probe). Models stay where they are
(VERACITY_MODELS_DIR points at the real models folder), so `embedded` tests find a model
pulled with `veracity models pull`.

Benchmark data: only tests marked `data` (or using the `benchmark_data_dir` fixture, which
marks them) see ``VERACITY_DATA_DIR``; every other test runs as on a bare clone, so a test
that silently needs the real data fails everywhere, not only where the data is missing.
Marked tests skip, with the reason, when the data directory is absent.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

_REAL_MODELS_DIR = os.environ.get("VERACITY_MODELS_DIR") or str(
    Path(os.environ.get("VERACITY_HOME", Path.home() / ".cache" / "veracity")) / "models"
)


@pytest.fixture(autouse=True)
def _isolated_home(request, tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("veracity-home")
    if "data" not in request.node.keywords:
        monkeypatch.delenv("VERACITY_DATA_DIR", raising=False)
    monkeypatch.setenv("VERACITY_HOME", str(home))
    monkeypatch.setenv("VERACITY_MODELS_DIR", _REAL_MODELS_DIR)
    monkeypatch.setenv("VERACITY_OFFLINE", "1")
    for var in ("VERACITY_LLM", "VERACITY_MODEL", "VERACITY_BASE_URL", "VERACITY_PROVIDER"):
        monkeypatch.delenv(var, raising=False)
    yield home
    _forget_consoles()


def _forget_consoles() -> None:
    """The CLI's consoles are made once per process, with the width of that moment; a test
    setting COLUMNS must not leave its width to the tests after it."""
    app = sys.modules.get("veracity.cli.app")
    for console in (getattr(app, "console", None), getattr(app, "out", None)):
        forget = getattr(console, "forget", None)  # a test may have put its own in place
        if forget is not None:
            forget()


@pytest.fixture
def real_models_dir() -> Path:
    return Path(_REAL_MODELS_DIR)


def _data_dir() -> Path | None:
    from veracity.core.errors import ConfigError
    from veracity.runtime.environment import data_dir

    try:
        return data_dir()
    except ConfigError:
        return None


@pytest.fixture
def benchmark_data_dir() -> Path:
    """The benchmark data directory (``VERACITY_DATA_DIR``); skips the test when absent."""
    found = _data_dir()
    if found is None:
        pytest.skip("benchmark data directory not found (set VERACITY_DATA_DIR)")
    return found


@pytest.fixture
def builds(monkeypatch):
    """Every run the service builds (`veracity.runtime.service.build_run`, counted)."""
    from veracity.runtime import service

    made = []
    real = service.build_run

    def counting(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(service, "build_run", counting)
    return made


@pytest.hookimpl(tryfirst=True)  # before xdist reads the xdist_group marks added here
def pytest_collection_modifyitems(config, items):
    from veracity.llm.models import is_pulled

    for item in items:
        if "benchmark_data_dir" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.data)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        _schedule_for_workers(items)

    if is_pulled("smollm2-135m", Path(_REAL_MODELS_DIR)):
        return
    skip = pytest.mark.skip(reason="embedded model not pulled; run `veracity models pull`")
    for item in items:
        if "embedded" in item.keywords:
            item.add_marker(skip)


def _schedule_for_workers(items: list) -> None:
    """Under pytest-xdist (`-n`, see pyproject's addopts): modules with a slow or embedded
    test go first, so the longest tests start at once instead of ending the run on one
    worker; every Ray test runs on one worker, one local cluster at a time."""

    def module(item) -> str:
        return item.nodeid.split("::")[0]

    slow = {
        module(i) for i in items if i.get_closest_marker("slow") or i.get_closest_marker("embedded")
    }
    items.sort(key=lambda i: module(i) not in slow)  # stable: each module stays in order
    for item in items:
        if item.get_closest_marker("ray"):
            item.add_marker(pytest.mark.xdist_group("ray"))


def pytest_terminal_summary(terminalreporter):
    """The experiment-config smoke test's count: configs × variants started / finished."""
    seen: dict[str, tuple[str, set[str]]] = {}
    for key in ("passed", "failed", "skipped", "error"):
        for rep in terminalreporter.stats.get(key, []):
            nodeid = getattr(rep, "nodeid", "")
            if "test_experiment_runs.py::test_config_variant" not in nodeid:
                continue
            stages = {v for k, v in getattr(rep, "user_properties", []) if k == "experiment_stage"}
            outcome, old = seen.get(nodeid, ("passed", set()))
            if rep.outcome != "passed":
                outcome = rep.outcome
            seen[nodeid] = (outcome, old | stages)
    if not seen:
        return
    started = sum("started" in s for _, s in seen.values())
    finished = sum("finished" in s and o == "passed" for o, s in seen.values())
    skipped = sum(o == "skipped" for o, _ in seen.values())
    terminalreporter.write_line(
        f"experiment configs × variants: {len(seen)} cases, {started} started, "
        f"{finished} finished, {skipped} skipped (method not registered on this branch)"
    )
