"""A paper's results table as an experiment config transcribes it (`paper:` in
`configs/experiments/*.yaml`), so a report can set a run beside the published figures."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from veracity.core.bounds import Weight

__all__ = ["PaperRow", "PaperTable"]

# a run's own metric, or a figure of `Metrics.extra` under its section (``gold_claims.``)
_METRIC = re.compile(r"^([a-z_]+\.)?(accuracy|macro_f1|f1:.+|precision:.+|recall:.+)$")


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
            ``recall:<label>`` with labels in the experiment's label space; a name may
            start with a section of the run's extra figures (``gold_claims.macro_f1``: the
            document task's claims checked given the annotated claims).
        ours: this row is what our implementation of the method reproduces.
        note: anything a reader must know about the row.
    """

    model_config = ConfigDict(extra="forbid")

    method: str
    model: str | None = None
    variant: str | None = None
    setting: str | None = None
    metrics: dict[str, Weight | None]
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
