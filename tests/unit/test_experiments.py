"""The paper-table configs in configs/experiments/: they load, resolve and are runnable."""

from __future__ import annotations

import pytest

from veracity.core import registry
from veracity.core.labels import get_label_space
from veracity.evaluation.experiment import ExperimentConfig, experiment_dir, load_experiment
from veracity.evaluation.runner import gold_mapper, map_gold, open_dataset, select_examples

CONFIGS = sorted(experiment_dir().glob("*.yaml"))
# One config per main table of each paper (issue 5), and our own baseline comparison.
OWN = {"baselines_scifact"}
BUILT = {"advfact"}  # datasets a command builds (tested with the command)
EXPECTED = {
    "zofia_table1", "zofia_table2", "toe_table2", "toe_table3", "toe_figure5", "radar_table2",
    "radar_table3", "radar_table4", "s2mad_table1", "s2mad_table2", "mermaid_table1",
    "mermaid_table2", "mermaid_table3", "mermaid_figure3",
}  # fmt: skip


# Further figures and tables the fidelity review asked for (issue 11).
FIGURES = {
    "s2mad_figure2", "s2mad_figure3", "zofia_table3", "zofia_figure3", "zofia_figure4",
    "radar_table5", "radar_table8", "radar_table9", "radar_figure3", "radar_figure4",
    "mermaid_proxy_memory",  # and MERMAID's proxy-memory experiment (issue 24)
}  # fmt: skip


# The document task (issue 26): whole answers of FactCheck-Bench and FacTool-QA.
DOCUMENTS = {"documents"}


def test_every_main_table_has_a_config():
    assert {p.stem for p in CONFIGS} == EXPECTED | OWN | FIGURES | DOCUMENTS


def _resolved(path):
    cfg = load_experiment(path)
    return [cfg] + [cfg.with_variant(v) for v in cfg.variants]


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_config_and_every_variant_resolve(path):
    for cfg in _resolved(path):
        assert cfg.name == path.stem and (cfg.paper is not None or cfg.name in OWN)
        space = get_label_space(cfg.labels)
        rows = cfg.paper_rows()
        # only a table our copy of the paper lacks may leave a run without rows
        assert rows or cfg.name in OWN or cfg.paper.missing, f"{cfg.variant}: no paper rows"
        for row in rows:
            for name in row.metrics:
                label = name.partition(":")[2]
                if label:
                    assert space.find(label) == label, f"{name} is not a label of {space.name}"
        # the dataset exists and its gold labels reach the method's label space
        info = open_dataset(cfg.dataset).info
        assert (cfg.split or info.splits[0]) in info.splits
        if cfg.gold_map is None:
            gold_mapper(info.label_space, cfg.labels)
        else:
            assert set(cfg.gold_map) == set(get_label_space(info.label_space).labels)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_method_config_validates_when_the_method_is_registered(path):
    for cfg in _resolved(path):
        if cfg.method not in registry.methods:
            continue  # the method lands later; `veracity eval` then says it is not registered
        cls = registry.methods.get(cfg.method)
        config_class = getattr(cls, "config_class", None)
        if config_class is not None:
            config_class.model_validate(cfg.method_config)


def test_stand_ins_are_named_where_the_data_differs():
    for path in CONFIGS:
        cfg = load_experiment(path)
        if cfg.name.startswith("mermaid") or cfg.name in OWN:
            assert cfg.stand_in is None  # MERMAID's own claim subsets are in the shared data
        else:
            assert cfg.stand_in, f"{cfg.name} must say how its dataset differs from the paper's"


def test_unknown_keys_are_rejected():
    with pytest.raises(ValueError, match="extra"):
        ExperimentConfig.model_validate({"method": "direct", "typo_key": 1})
    with pytest.raises(ValueError, match="unknown variants"):
        ExperimentConfig.model_validate(
            {
                "paper": {
                    "paper": "X", "table": "1", "caption": "c", "dataset": "d",
                    "scale": "fraction",
                    "rows": [{"method": "m", "variant": "v", "metrics": {"accuracy": 0.5}}],
                }
            }
        )  # fmt: skip


@pytest.mark.data
@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_every_variant_loads_its_data_and_maps_every_gold_label(path, benchmark_data_dir):
    loaded: dict[tuple, list] = {}  # ablation variants share their data: load it once
    for cfg in _resolved(path):
        if cfg.dataset in BUILT:
            continue  # made by a command (`veracity advfact build`), not in the shared data
        ds = open_dataset(cfg.dataset)
        key = (cfg.dataset, cfg.split or ds.info.splits[0])
        if key not in loaded:
            loaded[key] = ds.load(key[1], benchmark_data_dir)
        examples = select_examples(loaded[key], cfg.limit, cfg.sample, 0)
        assert examples, f"{cfg.variant}: no examples"
        gold = map_gold(examples, cfg.labels, cfg.gold_map)
        space = get_label_space(cfg.labels)
        assert all(g in space.labels for g, _ in gold.values())
