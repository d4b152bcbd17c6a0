"""`veracity report RUN_DIR`: a Markdown and a self-contained HTML report of one run.

Metrics are recomputed from ``predictions.jsonl`` (so a report of an interrupted run
describes exactly the examples that finished). When the run's config carries a paper
table (``paper:`` in an experiment config), the paper's reported rows are shown beside
ours on the paper's own scale.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from pydantic import ValidationError

from veracity.core.errors import EvalError, LabelError, RunStoreError
from veracity.core.labels import LabelSpace, get_label_space
from veracity.core.types import cost_text
from veracity.evaluation.document_metrics import headline as document_headline
from veracity.evaluation.document_metrics import with_document_metrics
from veracity.evaluation.experiment import ExperimentConfig, PaperTable
from veracity.evaluation.metrics import Metrics, UsageStats, compute_metrics
from veracity.evaluation.plots import action_heatmap_png, confusion_png, reliability_png
from veracity.evaluation.prepare import open_dataset
from veracity.evaluation.repeats import is_repeated, summarize_repeats
from veracity.evaluation.report_examples import example_rows, md_cell
from veracity.evaluation.store import PredictionRecord, RunStore


@dataclass
class RunResult:
    """A run directory, loaded: config, records and metrics recomputed from the records."""

    path: Path
    config: ExperimentConfig
    records: list[PredictionRecord]
    space: LabelSpace
    metrics: Metrics
    wall_time_s: float
    sessions: int
    engines: tuple[str, ...] = ()  # how the sessions ran: "local", "ray (2 workers)", ...

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def model(self) -> str:
        return self.config.llm.model


def _space(cfg: ExperimentConfig) -> LabelSpace:
    if not cfg.labels:
        raise RunStoreError("the run's record names no label space (`labels:`)")
    try:
        return get_label_space(cfg.labels)
    except LabelError:
        if not cfg.dataset:
            raise
        # the space may be registered by the dataset's loader module: import it

        try:
            open_dataset(cfg.dataset)
        except EvalError as exc:
            raise RunStoreError(f"label space {cfg.labels!r} is unknown: {exc}") from exc
        return get_label_space(cfg.labels)


def load_run(path: str | Path) -> RunResult:
    """Load a run directory; raises RunStoreError when it is not one or holds nothing."""
    store = RunStore(path)
    record = store.read_record()
    try:
        cfg = ExperimentConfig.model_validate(record.config)
    except ValidationError as exc:
        raise RunStoreError(f"{store.path}: the config in its {record.layout}: {exc}") from exc
    records = store.read_predictions()
    if not records:
        raise RunStoreError(f"{store.path}: no predictions yet")
    space = _space(cfg)
    sessions = store.read_sessions()
    return RunResult(
        path=store.path,
        config=cfg,
        records=records,
        space=space,
        metrics=with_document_metrics(store, records, compute_metrics(records, space), write=False),
        wall_time_s=sum(s.get("wall_time_s", 0.0) for s in sessions),
        sessions=len(sessions),
        engines=tuple(dict.fromkeys(_engine(s) for s in sessions if s.get("engine"))),
    )


def _engine(session: dict) -> str:
    if session["engine"] == "ray":
        return f"ray ({session.get('workers')} workers, {session.get('address')})"
    return str(session["engine"])


def metric_value(metrics: Metrics, name: str, space: LabelSpace) -> float | None:
    """A metric by the names paper tables use: accuracy, macro_f1, f1:<label>, ...; a
    sectioned name (``gold_claims.macro_f1``) is one of the run's extra figures."""
    if "." in name.partition(":")[0]:
        return metrics.extra.get(name)
    if name == "accuracy":
        return metrics.accuracy
    if name == "macro_f1":
        return metrics.macro_f1
    kind, _, label = name.partition(":")
    found = space.find(label)
    if found is None or found not in metrics.per_class:
        return None
    return getattr(metrics.per_class[found], kind, None)


def _fmt(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _paper_context(run: RunResult, paper: PaperTable) -> dict[str, Any]:
    rows = run.config.paper_rows()
    names: list[str] = []
    for r in rows:
        names += [k for k in r.metrics if k not in names]
    scale = 100.0 if paper.scale == "percent" else 1.0
    digits = 1 if paper.scale == "percent" else 2
    ours = [metric_value(run.metrics, n, run.space) for n in names]
    table = [
        {
            "method": r.method,
            "model": r.model or "",
            "setting": r.setting or "",
            "ours": r.ours,
            "note": r.note,
            "values": [_fmt(r.metrics.get(n), digits) for n in names],
            "delta": [
                f"{o * scale - r.metrics[n]:+.{digits}f}"
                if r.ours and o is not None and r.metrics.get(n) is not None
                else ""
                for n, o in zip(names, ours, strict=True)
            ],
        }
        for r in rows
    ]
    for row in table:
        row["delta_text"] = ", ".join(
            f"{n} {d}" for n, d in zip(names, row["delta"], strict=True) if d
        )
    return {
        "paper": paper.paper,
        "table": paper.table,
        "caption": paper.caption,
        "dataset": paper.dataset,
        "scale": paper.scale,
        "missing": paper.missing,
        "metrics": names,
        "rows": table,
        "ours": [_fmt(None if o is None else o * scale, digits) for o in ours],
        "has_ours_row": any(r.ours for r in rows),
        # where this run has no row: the variants that do (to say which to run)
        "variants_with_rows": sorted({r.variant for r in paper.rows if r.variant}),
    }


def _usage_rows(run: RunResult) -> list[tuple[str, str]]:
    u = run.metrics.usage
    return [
        ("tokens / example", f"{u.tokens_per_example:,.1f}"),
        ("LLM calls / example", f"{u.llm_calls_per_example:.2f}"),
        ("searches / example", f"{u.searches_per_example:.2f}"),
        ("prompt + completion tokens", f"{u.prompt_tokens:,} + {u.completion_tokens:,}"),
        ("cached LLM calls", f"{u.cached_llm_calls:,} of {u.llm_calls:,}"),
        *(
            [("prompt tokens reused by the server", f"{u.cached_prompt_tokens:,}")]
            if u.cached_prompt_tokens
            else []
        ),
        ("latency p50 / p95 (s)", f"{_fmt(u.latency_p50_s, 2)} / {_fmt(u.latency_p95_s, 2)}"),
        ("cost (USD)", _cost(u)),
        ("wall time (s)", f"{run.wall_time_s:.1f} over {run.sessions} session(s)"),
        *([("engine", ", ".join(run.engines))] if run.engines else []),
    ]


def method_counters(records: list[PredictionRecord]) -> dict[str, float]:
    """Sums of the numeric ``metadata.counters`` of every verdict (e.g. MERMAID's tool
    calls and memory hits), by counter name; empty when the method counts nothing."""
    totals: dict[str, float] = {}
    for record in records:
        metadata = record.verdict.metadata if record.verdict else {}
        counters = metadata.get("counters") or {}
        for name, value in counters.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                totals[name] = totals.get(name, 0) + value
    return totals


def _counter_rows(run: RunResult) -> list[tuple[str, str, str]]:
    n = max(len(run.records), 1)
    return [
        (name, f"{total:,g}", f"{total / n:.2f}")
        for name, total in method_counters(run.records).items()
    ]


def _cost(u: UsageStats) -> str:
    if u.unpriced_llm_calls and not u.cost_usd:
        return cost_text(u.cost_usd, u.unpriced_llm_calls)
    per = f"{u.cost_per_example_usd:.5f} / example"
    return f"{cost_text(u.cost_usd, u.unpriced_llm_calls)}, {per}"


def action_shares(run: RunResult) -> dict[str, dict[str, float]]:
    """Share of each retrieval action per claim category, from verdicts that record
    ``metadata.actions`` (action -> count) and ``metadata.category`` (ToE's Figure 5)."""
    counts: dict[str, dict[str, int]] = {}
    for rec in run.records:
        meta = rec.verdict.metadata if rec.verdict else {}
        actions, category = meta.get("actions"), meta.get("category")
        if not isinstance(actions, dict) or not category:
            continue
        row = counts.setdefault(str(category), {})
        for action, n in actions.items():
            row[action] = row.get(action, 0) + int(n)
    return {
        cat: {a: n / total for a, n in row.items()}
        for cat, row in sorted(counts.items())
        if (total := sum(row.values()))
    }


def _context(run: RunResult) -> dict[str, Any]:
    m, cfg = run.metrics, run.config
    confusion_cols = list(next(iter(m.confusion.values())).keys())
    crashed = [r for r in run.records if r.status == "exception"]
    errors = [r for r in run.records if r.status == "error"]
    return {
        "title": f"{cfg.method} on {cfg.dataset}/{cfg.split}",
        "path": str(run.path),
        "config": {
            "experiment": cfg.name,
            "description": cfg.description,
            "variant": cfg.variant,
            "method": cfg.method,
            "dataset": f"{cfg.dataset} ({cfg.split})",
            "labels": cfg.labels,
            "model": f"{cfg.llm.backend}: {cfg.llm.model}",
            "examples": m.n,
            "stand_in": cfg.stand_in,
        },
        "headline": [
            ("accuracy", _fmt(m.accuracy)),
            ("macro-F1", _fmt(m.macro_f1) + f" (over {', '.join(m.macro_f1_classes)})"),
            ("abstention rate", _fmt(m.abstention_rate)),
            ("error rate", _fmt(m.error_rate)),
            ("crashed (bugs)", f"{m.counts['exception']}"),
            ("ECE (veracity)", _fmt(m.calibration.ece) if m.calibration else "no scores"),
            (
                "ECE (confidence)",
                _fmt(m.confidence_calibration.ece) if m.confidence_calibration else "none",
            ),
            *((name, "n/a" if v is None else _fmt(v)) for name, v in document_headline(m.extra)),
        ],
        "per_class": [
            (label, _fmt(s.precision), _fmt(s.recall), _fmt(s.f1), s.support, s.predicted)
            for label, s in m.per_class.items()
        ],
        "confusion_cols": confusion_cols,
        "confusion": [(g, [row[c] for c in confusion_cols]) for g, row in m.confusion.items()],
        "bins": [
            (f"{b.lower:.1f}–{b.upper:.1f}", b.count, _fmt(b.mean_score), _fmt(b.mean_target))
            for b in (m.calibration.bins if m.calibration else [])
        ],
        "usage": _usage_rows(run),
        "counters": _counter_rows(run),
        "crashed": [(r.id, (r.exception or "").strip().splitlines()[-1:]) for r in crashed],
        "errors": [(r.id, r.verdict.error if r.verdict else "") for r in errors[:20]],
        "n_errors": len(errors),
        "paper": _paper_context(run, cfg.paper) if cfg.paper else None,
        "actions": _action_rows(run),
        **_examples(run),
    }


def _examples(run: RunResult) -> dict[str, Any]:
    rows, left_out = example_rows(run.records)
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.outcome] = counts.get(row.outcome, 0) + 1
    return {
        "examples": rows,
        "examples_left_out": left_out,
        "outcomes": ", ".join(f"{n} {name}" for name, n in counts.items()),
        "inputs_missing": sum(1 for r in rows if r.input is None),
    }


def _action_rows(run: RunResult) -> dict[str, Any] | None:
    shares = action_shares(run)
    if not shares:
        return None
    cols = sorted({a for row in shares.values() for a in row})
    rows = [(cat, [f"{row.get(c, 0.0) * 100:.1f}" for c in cols]) for cat, row in shares.items()]
    return {"cols": cols, "rows": rows}


def _env(autoescape: bool) -> jinja2.Environment:
    root = resources.files("veracity.evaluation") / "templates"
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(root)),
        undefined=jinja2.StrictUndefined,
        autoescape=autoescape,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["md"] = md_cell  # untrusted text in a Markdown table cell
    return env


def figures(run: RunResult) -> dict[str, bytes]:
    """PNG bytes of the confusion matrix, the reliability diagram (when there are scores)
    and the action heat map (when verdicts record actions by claim category)."""
    out = {"confusion": confusion_png(run.metrics.confusion, "confusion matrix")}
    if run.metrics.calibration is not None:
        out["reliability"] = reliability_png(run.metrics.calibration)
    shares = action_shares(run)
    if shares:
        out["actions"] = action_heatmap_png(shares)
    return out


def render_markdown(run: RunResult, images: dict[str, str]) -> str:
    """The Markdown report; `images` maps figure names to relative file paths."""
    return _env(False).get_template("report.md.j2").render(images=images, **_context(run))


def render_html(run: RunResult, pngs: dict[str, bytes]) -> str:
    """The self-contained HTML report, figures inlined as base64 PNG data URIs."""
    images = {k: "data:image/png;base64," + base64.b64encode(v).decode() for k, v in pngs.items()}
    return _env(True).get_template("report.html.j2").render(images=images, **_context(run))


def write_report(run_dir: str | Path, out_dir: str | Path | None = None) -> tuple[Path, Path]:
    """Write report.md (with PNGs in report_files/) and report.html; returns their paths.

    For a repeated run (``--repeats``) the report gives each metric's spread over the
    repeats; each repeat's directory has a full report of its own.
    """
    if is_repeated(run_dir):
        return write_repeats_report(run_dir, out_dir)
    run = load_run(run_dir)
    out = Path(out_dir) if out_dir else run.path
    files = out / "report_files"
    files.mkdir(parents=True, exist_ok=True)
    pngs = figures(run)
    for name, data in pngs.items():
        (files / f"{name}.png").write_bytes(data)
    md = out / "report.md"
    md.write_text(
        render_markdown(run, {k: f"report_files/{k}.png" for k in pngs}), encoding="utf-8"
    )
    html = out / "report.html"
    html.write_text(render_html(run, pngs), encoding="utf-8")
    return md, html


def write_repeats_report(
    run_dir: str | Path, out_dir: str | Path | None = None
) -> tuple[Path, Path]:
    """report.md and report.html of a repeated run: median, range and quartiles by metric."""
    summary = summarize_repeats(run_dir)
    cfg = ExperimentConfig.model_validate(RunStore(run_dir).read_config())
    rows = [
        {
            "name": name,
            **{k: _fmt(getattr(s, k)) for k in ("median", "min", "max", "q1", "q3", "iqr")},
            "values": ", ".join(_fmt(v) for v in s.values),
        }
        for name, s in summary.metrics.items()
    ]
    context = {
        "title": f"{cfg.name or cfg.method} on {cfg.dataset}, repeated",
        "path": str(run_dir), "finished": summary.finished, "repeats": summary.repeats,
        "seeds": ", ".join(map(str, summary.seeds)), "n": ", ".join(map(str, summary.n)),
        "method": cfg.method, "dataset": cfg.dataset, "labels": cfg.labels,
        "model": cfg.llm.model, "rows": rows, "runs": ", ".join(summary.runs),
    }  # fmt: skip
    out = Path(out_dir) if out_dir else Path(run_dir)
    out.mkdir(parents=True, exist_ok=True)
    md, html = out / "report.md", out / "report.html"
    md.write_text(_env(False).get_template("repeats.md.j2").render(**context), encoding="utf-8")
    html.write_text(_env(True).get_template("repeats.html.j2").render(**context), encoding="utf-8")
    return md, html
