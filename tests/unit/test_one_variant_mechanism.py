"""One variant mechanism (issue 39, item 1): ZoFia, S2MAD and MERMAID have no variant table
of their own; each of their ablations is a variant of an experiment file that sets the
method's settings, the same settings the method's table gave, and a run file or flag that
still names a method variant is told which experiment variant to run."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from veracity.cli import app
from veracity.core.config import RunConfig
from veracity.core.errors import ConfigError
from veracity.runtime import layered_config, spec_of

EXPERIMENTS = Path(__file__).parents[2] / "configs" / "experiments"

# The methods' own tables as they were at 549b8cf (zofia/config.py VARIANTS,
# s2mad/config.py VARIANTS, mermaid's `variant` option): name -> settings it set.
OLD = {
    "zofia": {
        "no_wikipedia": {"use_wikipedia": False},
        "no_web": {"use_web": False},
        "no_retrieval": {"use_web": False, "use_wikipedia": False},
        "no_linguist": {"linguist": False},
        "no_expert": {"expert": False},
        "no_analyses": {"linguist": False, "expert": False},
        "no_claim_verification": {"claim_verification": False},
        "no_debate": {"debate": False},
        "tfidf": {"query_mode": "tfidf"},
        "prompt_ner": {"query_mode": "llm_ner", "ner_backend": "llm"},
        "llm_keywords": {"query_mode": "llm_keywords"},
        "sentence_salience": {"query_mode": "sentence_salience"},
        "core_claim": {"query_mode": "core_claim"},
        "or_composition": {"operator": "OR"},
    },
    "s2mad": {
        "no_stance": {"stance_separation": False},
        "no_subjective": {"prompt_family": "non_subjective"},
        "no_non_subjective": {"prompt_family": "subjective"},
        "no_debate": {"debate": False},
        "llm_only": {"debate": False, "single_agent_input": "random", "prompt_family": "vanilla"},
    },
    "mermaid": {"no_decomposer": {"decompose": False}, "no_memory": {"memory": {"mode": "off"}}},
}
# where each name lives now: (experiment file, its variant of that name)
WHERE = {
    "zofia": {
        **dict.fromkeys(
            [
                *("no_wikipedia", "no_web", "no_retrieval", "no_linguist", "no_expert"),
                *("no_analyses", "no_claim_verification", "no_debate"),
            ],
            "zofia_table2",
        ),
        **dict.fromkeys(
            [
                *("tfidf", "prompt_ner", "llm_keywords", "sentence_salience", "core_claim"),
                "or_composition",
            ],
            "zofia_table3",
        ),
    },
    "s2mad": {
        **dict.fromkeys(["no_stance", "no_subjective", "no_non_subjective"], "s2mad_table2"),
        "no_debate": "s2mad_table2",
        "llm_only": "s2mad_table1",
    },
    "mermaid": {"no_decomposer": "mermaid_table3", "no_memory": "mermaid_figure3"},
}
CASES = [(m, name) for m in OLD for name in OLD[m]]


@pytest.mark.parametrize(("method", "name"), CASES)
def test_each_ablation_is_an_experiment_variant_with_the_tables_settings(method, name):
    path = EXPERIMENTS / f"{WHERE[method][name]}.yaml"
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    for variant in raw.get("variants", {}).values():  # no method variant names left
        assert "variant" not in (variant.get("method_config") or {})
    cfg = layered_config(path, variant=name)
    if method == "mermaid":  # the experiments run MERMAID on recorded searches
        cfg = cfg.with_overrides({"method": "mermaid"})
    got = spec_of(cfg).method_config
    want = spec_of(
        RunConfig(method=method, method_config={**cfg.method_config, **OLD[method][name]})
    ).method_config
    assert got == want
    for key in OLD[method][name]:
        assert getattr(got, key) == getattr(want, key)


@pytest.mark.parametrize(("method", "name"), CASES)
def test_a_method_variant_name_is_refused_naming_the_experiment_variant(method, name):
    file = WHERE[method][name]
    with pytest.raises(ConfigError) as caught:
        spec_of(RunConfig(method=method, method_config={"variant": name}))
    text = str(caught.value)
    assert f"--config configs/experiments/{file}.yaml --variant {name}" in text
    assert "\n" not in text


def test_unknown_names_are_refused_and_older_records_still_read():
    with pytest.raises(ConfigError, match="takes no `variant`"):
        spec_of(RunConfig(method="zofia", method_config={"variant": "nope"}))
    # MERMAID's recorded default ("full") and a recorded null are the defaults
    assert spec_of(RunConfig(method="mermaid", method_config={"variant": "full"})).method_config
    assert spec_of(RunConfig(method="s2mad", method_config={"variant": None})).method_config


def test_the_command_line_says_which_experiment_variant_to_run():
    result = CliRunner().invoke(
        app,
        ["check", "A claim.", "--method", "zofia", "--set", "variant=no_web"],
        env={"COLUMNS": "300"},
    )
    assert result.exit_code == 2, result.output
    assert "--config configs/experiments/zofia_table2.yaml --variant no_web" in result.output
