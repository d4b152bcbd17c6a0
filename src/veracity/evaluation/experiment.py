"""Experiment configs: run configs with variants and the paper's reported numbers.

An experiment YAML (``configs/experiments/``) uses the one run-config schema,
`veracity.core.config.RunConfig`: its evaluation keys (dataset, split, limit, sample, gold_map,
stand_in), ``variants`` (named overrides for the other rows or columns of the same
table; ``--variant NAME`` picks one) and ``paper`` (`PaperTable`). `ExperimentConfig` is
the same class under the name the evaluation code has always used.

The resolved config of a run (the ``config`` of ``RUN_DIR/run.json``) has the chosen
variant applied and named in ``variant``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from veracity.core.config import RunConfig, Variant, load_run_config
from veracity.core.paper_table import PaperRow, PaperTable

ExperimentConfig = RunConfig


def load_experiment(path: str | Path, **overrides: Any) -> RunConfig:
    """Read an experiment (or plain run) YAML; `overrides` that are not None win."""
    return load_run_config(path, **overrides)


def experiment_dir() -> Path:
    """``configs/experiments`` of the source checkout."""
    return Path(__file__).resolve().parents[3] / "configs" / "experiments"


__all__ = [
    "ExperimentConfig",
    "PaperRow",
    "PaperTable",
    "RunConfig",
    "Variant",
    "experiment_dir",
    "load_experiment",
]
