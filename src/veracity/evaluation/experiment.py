"""Experiment configs: a run config plus variants and the paper's reported numbers.

An experiment YAML (see ``configs/experiments/``) is a `veracity.config.RunConfig` with
a few more keys:

- ``name`` / ``description``: what the experiment reproduces.
- ``labels``: the method's label space (gold labels are mapped into it).
- ``gold_map``: an explicit table from the dataset's labels to ``labels``, for a
  pairing no registered `LabelMap` covers (it is validated like one).
- ``sample``: with ``limit``, draw a seeded random sample instead of the first N.
- ``stand_in``: how our dataset differs from the paper's, when it does.
- ``variants``: named overrides (dataset, split, method config, model ...) for the other
  columns or rows of the same table; ``veracity eval --variant NAME`` picks one.
  Ablations and dataset variants are entries here, never copied files.
- ``paper``: the table as the paper reports it (`PaperTable`).

The resolved config of a run (``RUN_DIR/config.yaml``) is an `ExperimentConfig` with the
chosen variant applied and named in ``variant``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from veracity.config import ConfigError, RunConfig, load_yaml

_METRIC = re.compile(r"^(accuracy|macro_f1|f1:.+|precision:.+|recall:.+)$")


class PaperRow(BaseModel):
    """One row of a paper's table (one method, model and column group).

    Attributes:
        method: the method as the paper names it.
        model: the backbone LLM, where the table names one.
        variant: which of the experiment's variants these numbers belong to; None for
            the experiment's base run.
        setting: a sub-heading of the table (e.g. "retrieved evidence").
        metrics: metric name -> value as printed in the paper (None: not reported).
            Names: ``accuracy``, ``macro_f1``, ``f1:<label>``, ``precision:<label>``,
            ``recall:<label>`` with labels in the experiment's label space.
        ours: this row is what our implementation of the method reproduces.
        note: anything a reader must know about the row.
    """

    model_config = ConfigDict(extra="forbid")

    method: str
    model: str | None = None
    variant: str | None = None
    setting: str | None = None
    metrics: dict[str, float | None]
    ours: bool = False
    note: str = ""

    @model_validator(mode="after")
    def _names(self) -> PaperRow:
        bad = [k for k in self.metrics if not _METRIC.match(k)]
        if bad:
            raise ValueError(f"unknown metric names {bad}; use accuracy, macro_f1, f1:<label>")
        return self


class PaperTable(BaseModel):
    """A results table of a paper, transcribed.

    Attributes:
        paper: short name of the paper (e.g. "RADAR").
        table: the table's number as printed (e.g. "Table 2").
        caption: what the table shows, in our words.
        dataset: the paper's dataset(s) for this table.
        scale: "percent" (0–100) or "fraction" (0–1), as printed.
        rows: the transcribed rows.
        missing: what our copy of the paper does not give (e.g. a table body).
    """

    model_config = ConfigDict(extra="forbid")

    paper: str
    table: str
    caption: str
    dataset: str
    scale: Literal["percent", "fraction"]
    rows: list[PaperRow] = Field(default_factory=list)
    missing: str = ""

    def value(self, raw: float | None) -> float | None:
        """A reported value on the 0–1 scale."""
        if raw is None:
            return None
        return raw / 100.0 if self.scale == "percent" else raw

    def rows_for(self, variant: str | None) -> list[PaperRow]:
        """Rows of `variant`; when it has none of its own, the base rows."""
        own = [r for r in self.rows if r.variant == variant]
        return own or [r for r in self.rows if r.variant is None]


class Variant(BaseModel):
    """Overrides of one variant; mappings (method_config, llm, sources) are merged."""

    model_config = ConfigDict(extra="forbid")

    description: str = ""
    method: str | None = None
    method_config: dict[str, Any] = Field(default_factory=dict)
    llm: dict[str, Any] = Field(default_factory=dict)
    sources: dict[str, dict[str, Any]] = Field(default_factory=dict)
    dataset: str | None = None
    split: str | None = None
    limit: int | None = None
    labels: str | None = None
    gold_map: dict[str, str] | None = None
    sample: bool | None = None
    stand_in: str | None = None


class ExperimentConfig(RunConfig):
    """A run config with variants and the paper's numbers (see the module docstring)."""

    name: str = ""
    description: str = ""
    labels: str | None = None
    gold_map: dict[str, str] | None = None
    sample: bool = False
    stand_in: str | None = None
    variant: str | None = None
    variants: dict[str, Variant] = Field(default_factory=dict)
    paper: PaperTable | None = None

    @model_validator(mode="after")
    def _rows_name_variants(self) -> ExperimentConfig:
        if self.paper is not None:
            unknown = {r.variant for r in self.paper.rows} - set(self.variants) - {None}
            if unknown:
                raise ValueError(f"paper rows name unknown variants: {sorted(unknown)}")
        if self.variant is not None and self.variant not in self.variants:
            raise ValueError(f"variant {self.variant!r} is not one of {sorted(self.variants)}")
        return self

    def with_variant(self, name: str | None) -> ExperimentConfig:
        """A copy with variant `name` applied (None: the base run, unchanged)."""
        if name is None:
            return self
        if name not in self.variants:
            known = ", ".join(sorted(self.variants)) or "none"
            label = self.name or "config"
            raise ConfigError(f"{label} has no variant {name!r} (variants: {known})")
        v = self.variants[name]
        data = self.model_dump()
        keys = ("method", "dataset", "split", "limit", "labels", "gold_map", "sample", "stand_in")
        for key in keys:
            if getattr(v, key) is not None:
                data[key] = getattr(v, key)
        data["method_config"] = {**self.method_config, **v.method_config}
        data["llm"] = {**data["llm"], **v.llm}
        data["sources"] = {**self.sources, **v.sources}
        data["variant"] = name
        try:
            return ExperimentConfig.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"variant {name!r}: {exc}") from exc

    def paper_rows(self) -> list[PaperRow]:
        return self.paper.rows_for(self.variant) if self.paper else []


def load_experiment(path: str | Path, **overrides: Any) -> ExperimentConfig:
    """Read an experiment (or plain run) YAML; `overrides` that are not None win."""
    data = load_yaml(path)
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {exc}") from exc


def experiment_dir() -> Path:
    """``configs/experiments`` of the source checkout."""
    return Path(__file__).resolve().parents[3] / "configs" / "experiments"
