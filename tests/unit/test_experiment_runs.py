"""Every experiment config, and every variant of it, runs one example as shipped.

Offline: the scripted model answers every request with a schema-valid reply
(`veracity.testing.schema`), the data is the miniature data directory, and the network
is the recorded world of `_offline_world` (DuckDuckGo and Wikipedia answers; local
indexes built under the config's names). The configs are found by glob, so a config
added later is covered without editing this file. A config whose method is not
registered on this branch is skipped with that reason. `tests/conftest.py` prints the
count of cases started and finished.
"""

from __future__ import annotations

import asyncio

import pytest
from _offline_world import DATA_DIR, build_checkpoints, build_indexes, recorded_network

from veracity.core import registry
from veracity.evaluation.experiment import experiment_dir, load_experiment
from veracity.evaluation.repeats import run_repeats
from veracity.evaluation.runner import prepare_run, run_session
from veracity.evaluation.store import RunStore
from veracity.testing.schema import schema_llm

CONFIGS = sorted(experiment_dir().glob("*.yaml"))


def _cases():
    for path in CONFIGS:
        try:
            variants = [None, *load_experiment(path).variants]
        except Exception as exc:  # reported by the test, not at collection
            yield pytest.param(path, None, exc, id=f"{path.stem}:unreadable")
            continue
        for v in variants:
            yield pytest.param(path, v, None, id=f"{path.stem}:{v or 'base'}")


def build_memories(cfg) -> list[str]:
    """File one document in each named MERMAID memory a config reads (``read-only``) and
    that holds nothing yet, as the config's building run would. Returns the names filled."""
    memory = cfg.method_config.get("memory")
    if not cfg.method.startswith("mermaid") or not isinstance(memory, dict):
        return []
    if not memory.get("name") or memory.get("mode") != "read-only":
        return []
    from veracity.core.types import Document
    from veracity.evidence.memory import EvidenceMemory
    from veracity.methods.mermaid.memory import named_memory_path
    from veracity.runtime.home import home_paths

    built = EvidenceMemory(path=named_memory_path(memory["name"], home_paths()), embedder=None)
    if built.stats().entries:
        return []
    built.store(["claim"], [Document(id="m1", text="evidence a building run found")])
    return [memory["name"]]


@pytest.fixture
def offline_world(monkeypatch):
    with recorded_network(monkeypatch) as router:
        yield router


@pytest.mark.parametrize(("path", "variant", "unreadable"), list(_cases()))
def test_config_variant_runs_one_example(path, variant, unreadable, offline_world, tmp_path,
                                         record_property):  # fmt: skip
    if unreadable is not None:
        raise unreadable
    cfg = load_experiment(path).with_variant(variant)
    if cfg.method not in registry.methods:
        pytest.skip(f"method {cfg.method!r} is not registered on this branch")
    cfg = cfg.model_copy(
        update={"limit": 1, "sample": False, "sample_per_class": None, "repeats": 1,
                "concurrency": 1, "data_dir": str(DATA_DIR)}
    )  # fmt: skip
    if cfg.method.startswith("mermaid"):  # its tools in this process, on the recordings
        tools = {**cfg.method_config, "tool_transport": "inprocess"}
        cfg = cfg.model_copy(update={"method_config": tools})
    build_indexes(cfg)
    build_checkpoints(cfg)
    build_memories(cfg)
    run = prepare_run(cfg, tmp_path / "run", llm=schema_llm())
    record_property("experiment_stage", "started")
    asyncio.run(run_session(run, 1))
    [record] = run.store.read_predictions()
    problem = record.exception or (record.verdict.error if record.verdict else None)
    problem = problem or (record.verdict.abstain_reason if record.verdict else None)
    assert record.status == "ok", f"{record.status}: {problem}"
    assert record.verdict.usage.llm_calls >= 1
    record_property("experiment_stage", "finished")


# The paper analyses that draw balanced samples (RADAR's 150-claim analyses: 50 per
# class) or repeat over seeds (ToE: the median of ten 50-claim samples), run through the
# harness's --sample-per-class and --repeats on the miniature data.
BALANCED = ["radar_table2", "toe_table2"]


@pytest.mark.parametrize("stem", BALANCED)
def test_balanced_sample_repeated_over_seeds(stem, offline_world, tmp_path):
    path = experiment_dir() / f"{stem}.yaml"
    if not path.is_file():
        pytest.skip(f"{path.name} is not on this branch")
    cfg = load_experiment(path).with_variant(None)
    if cfg.method not in registry.methods:
        pytest.skip(f"method {cfg.method!r} is not registered on this branch")
    cfg = cfg.model_copy(
        update={"limit": None, "sample": False, "sample_per_class": 1, "repeats": 2,
                "concurrency": 1, "data_dir": str(DATA_DIR)}
    )  # fmt: skip
    build_indexes(cfg)
    build_checkpoints(cfg)
    summary = asyncio.run(run_repeats(cfg, tmp_path / "rep", llm=schema_llm()))
    assert summary.finished == 2 and len(set(summary.seeds)) == 2
    runs = [RunStore(tmp_path / "rep" / run) for run in summary.runs]
    for store in runs:
        golds = [r.gold for r in store.read_predictions()]
        assert len(golds) >= 2 and len(golds) == len(set(golds)), f"not one per class: {golds}"
    assert "accuracy" in summary.metrics


# The papers' baselines that run as methods here (paper's name -> registered method). A
# published row of one of them must sit beside a variant that runs it, so the cases
# above run it on one example and `veracity report` puts ours beside the paper's.
BASELINES = {"FIRE": "fire", "D2D": "d2d", "SAFE": "safe"}
BASELINES |= {"FOLK": "folk", "ProgramFC": "programfc", "Self-Ask": "self_ask"}  # MERMAID T2
BASELINES |= {"FacTool": "factool", "FactCheck-GPT": "factcheck_gpt"}  # MERMAID Table 1
BASELINES |= {"HiSS": "hiss", "HiSS + RA": "hiss", "FactAgent": "factagent"}  # ZoFia, RADAR
BASELINES |= {"ReAct (search API)": "react"}  # ZoFia Table 1


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_every_published_row_of_a_baseline_we_run_has_its_variant(path):
    cfg = load_experiment(path)
    if cfg.paper is None:
        pytest.skip("no paper table")

    def method_of(variant):
        return cfg.with_variant(variant).method

    rows = [r for r in cfg.paper.rows if r.method in BASELINES]
    runs = {
        (r.method, r.model, tuple(sorted(r.metrics.items())))
        for r in rows
        if r.ours and r.variant is not None and method_of(r.variant) == BASELINES[r.method]
    }
    missing = [
        f"{r.method} ({r.model or 'no model'}, variant {r.variant or 'base'})"
        for r in rows
        if (r.method, r.model, tuple(sorted(r.metrics.items()))) not in runs
    ]
    assert not missing, f"published baseline rows without a variant that runs them: {missing}"
