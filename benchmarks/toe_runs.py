"""ToE figures from finished runs: tree statistics and timings, nothing re-run.

Run:
    python benchmarks/toe_runs.py eval RUN_DIR [RUN_DIR ...]     # `veracity eval` runs
    python benchmarks/toe_runs.py train CHECKPOINT_DIR            # `veracity train toe`
    python benchmarks/toe_runs.py common RUN_DIR RUN_DIR ...      # side by side

For an eval run directory (ToE or any other method): examples, accuracy, macro-F1 and,
for ToE verdicts, tree statistics — nodes, depth, iterations (mean, median, max), stop
reasons, node statuses, actions, LLM calls and searches per claim, latency per claim.
For a training checkpoint: claims collected, wall time per claim (the
measured per-claim times and their sum; claims that reused cached LLM replies are
counted apart), LLM calls, tokens, GRPO updates and the networks' training losses.

`common` scores several runs (e.g. direct, cot and two ToE variants) on the claims that
every one of them finished, so that a comparison stays fair when some runs were stopped
early: accuracy, macro-F1, predicted-label counts, LLM calls and latency per claim.

Every figure is computed from what the run recorded; the machine load during the run is
not known here, so say it when you quote a figure (`cat /proc/loadavg` while it runs).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any


def _dist(values: list[float]) -> str:
    if not values:
        return "—"
    return (
        f"mean {statistics.mean(values):.2f}, median {statistics.median(values):.1f}, "
        f"min {min(values):g}, max {max(values):g}"
    )


def eval_summary(run_dir: Path) -> dict[str, Any]:
    from veracity.evaluation.report import load_run

    run = load_run(run_dir)
    m = run.metrics
    out: dict[str, Any] = {
        "run": str(run_dir),
        "method": run.config.method,
        "examples": m.n,
        "accuracy": round(m.accuracy, 4),
        "macro_f1": round(m.macro_f1, 4),
        "errors": m.counts["error"] + m.counts["exception"],
        "latency_s": _dist([r.latency_s for r in run.records]),
        "llm_calls": _dist([r.usage.llm_calls for r in run.records]),
    }
    metas = [r.verdict.metadata if r.verdict else {} for r in run.records]
    trees = [meta for meta in metas if "tree" in meta]
    if trees:
        statuses: Counter = Counter()
        actions: Counter = Counter()
        for meta in trees:
            statuses.update(meta.get("status_counts") or {})
            actions.update(meta.get("actions") or {})
        out["trees"] = {
            "claims": len(trees),
            "nodes": _dist([t["nodes"] for t in trees]),
            "depth": _dist([t["depth"] for t in trees]),
            "iterations": _dist([t["iterations"] for t in trees]),
            "stop_reasons": dict(Counter(t["stop_reason"] for t in trees)),
            "node_status": dict(statuses),
            "actions": dict(actions),
            "categories": dict(Counter(t.get("category") for t in trees)),
            "searches": _dist([r.usage.searches for r in run.records]),
        }
    return out


def train_summary(folder: Path) -> dict[str, Any]:
    records = [
        json.loads(line)
        for line in (folder / "records.jsonl").read_text().splitlines()
        if line.strip()
    ]
    fresh = [r for r in records if not r["usage"].get("cached_llm_calls")]
    times = [r.get("latency_s", 0.0) for r in fresh]
    manifest = json.loads((folder / "manifest.json").read_text())
    return {
        "checkpoint": str(folder),
        "claims": len(records),
        "claims_without_cached_calls": len(fresh),
        "errors": sum(bool(r.get("error")) for r in records),
        "seconds_per_claim": _dist(times),
        "measured_seconds_total": round(sum(times), 1),
        "llm_calls_per_claim": _dist([r["usage"]["llm_calls"] for r in records]),
        "tokens_per_claim": _dist(
            [r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"] for r in records]
        ),
        "stop_reasons": dict(Counter((r.get("stats") or {}).get("stop_reason") for r in records)),
        "metrics": manifest.get("metrics"),
        "trained": manifest.get("trained"),
    }


def common_summary(run_dirs: list[Path]) -> dict[str, Any]:
    from veracity.evaluation.metrics import compute_metrics
    from veracity.evaluation.report import load_run

    runs = [load_run(d) for d in run_dirs]
    ids = set.intersection(*({r.id for r in run.records} for run in runs))
    if not ids:
        raise SystemExit("the runs share no finished claim")
    out: dict[str, Any] = {"claims": len(ids), "runs": []}
    for path, run in zip(run_dirs, runs, strict=True):
        rows = sorted((r for r in run.records if r.id in ids), key=lambda r: r.id)
        m = compute_metrics(rows, run.space)
        out.setdefault("gold", dict(Counter(r.gold for r in rows)))
        out["runs"].append(
            {
                "run": str(path),
                "method": run.config.method,
                "accuracy": round(m.accuracy, 4),
                "macro_f1": round(m.macro_f1, 4),
                "predicted": dict(Counter(r.predicted for r in rows)),
                "errors": m.counts["error"] + m.counts["exception"],
                "llm_calls": _dist([r.usage.llm_calls for r in rows]),
                "latency_s": _dist([r.latency_s for r in rows]),
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["eval", "train", "common"])
    parser.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args()
    if args.kind == "common":
        print(json.dumps(common_summary(args.paths), indent=2))
        return
    for path in args.paths:
        summary = eval_summary(path) if args.kind == "eval" else train_summary(path)
        print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
