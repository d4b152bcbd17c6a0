"""RADAR: does the adopted label belong to its confidence, and how often does the stop
margin saturate? (issue 11's figures; run it on two checkouts to compare).

Run: python benchmarks/radar_agreement.py [--claims 30] [--concurrency 2] [--out FILE]
     [--rounds 2] [--turn-tokens 64] [--judge-tokens 96] [--top-m 3]

RADAR (the `radar` variant of configs/experiments/baselines_scifact.yaml: BM25 index
`scifact-bm25`, build it with `veracity index build --dataset scifact --name scifact-bm25
--mode bm25`) checks the first `--claims` SciFact train claims on the configured model
(the embedded one by default), with every round's signals recorded and the round judge
asked every round (`record_signals`, `lazy_judge: false`). Shorter debates than the
paper's (`--rounds`, token caps) keep a slow CPU model within reach; the figures are
about the decision mechanics, not accuracy. The LLM cache is off, so each run calls the
model.

`--signals-only` skips the debate: for each claim it builds RADAR's evidence pool and
asks the stop agent and the round judge once, over an empty debate (two decisions per
claim instead of a whole debate; the same prompts, estimators and code paths). It is the
cheap way to compare two checkouts on a slow machine.

Printed:
- label/confidence agreement: of every decision shown with probabilities (each round
  judge's ruling and each final verdict), how many have a label that is the most
  probable label (ties count as agreeing);
- saturated stop margins: of the stop agent's readings, how many have s = ±1 exactly,
  with the estimator used and the matched probability mass of logprob readings.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

from veracity import runtime
from veracity.datasets import load_dataset

CONFIG = Path(__file__).resolve().parent.parent / "configs/experiments/baselines_scifact.yaml"


def agrees(label: str | None, probs: dict[str, float] | None) -> bool | None:
    """Whether `label` is (one of) the most probable; None when there is nothing to test."""
    if label is None or not probs:
        return None
    return probs.get(label, -1.0) >= max(probs.values()) - 1e-9


def decisions(verdict: Any) -> list[tuple[str, bool]]:
    """(where, agrees) for the round judges' rulings and the final verdict."""
    out = []
    for sig in verdict.metadata.get("signals") or []:
        ok = agrees(sig.get("label"), sig.get("probabilities"))
        if ok is not None:
            out.append((f"round_judge:{sig.get('round')}", ok))
    ok = agrees(verdict.label, verdict.probabilities)
    if ok is not None:
        out.append(("verdict", ok))
    return out


def stop_readings(verdict: Any) -> list[dict[str, Any]]:
    return [
        {
            "margin": s["stop_margin"],
            "estimator": s.get("stop_estimator"),
            "mass": s.get("stop_matched_mass"),
            "logprob_mass": s.get("stop_logprob_mass"),
        }
        for s in verdict.metadata.get("signals") or []
        if s.get("stop_margin") is not None
    ]


async def signals_only(run: Any, ex: Any) -> dict[str, Any]:
    """One stop-agent reading and one round-judge ruling over an empty debate."""
    from veracity.core import context
    from veracity.deliberation.debate import DebateState
    from veracity.deliberation.transcript import Transcript
    from veracity.methods.radar.pool import fit_pool, gather_candidates
    from veracity.methods.radar.roles import RadarPrompts, make_role
    from veracity.prompting import render_input

    method, claim = run.method, ex.input
    cfg = method.config
    with context.check_context():
        docs, source = await gather_candidates(claim, cfg, method.source)
        names = method.participants()
        pool = fit_pool(docs, cfg, window=8192, turns=len(names) * cfg.rounds,
                        origin=cfg.evidence, source=source)  # fmt: skip
        roles = [make_role(n, None) for n in names]
        titles = {r.name: r.display for r in roles}
        prompts = RadarPrompts(render_input(claim), pool, cfg.roles, titles, method.label_space)
        stop = method.policy(prompts)
        state = DebateState(method.label_space, Transcript(), 1, "opening", cfg.rounds)
        margin, details = await stop.signal(state)
        decision = await stop.provisional(state)
    probs = decision.probabilities
    return {
        "label": decision.label,
        "probabilities": probs,
        "error": None,
        "decisions": [("round_judge:1", agrees(decision.label, probs))],
        "stops": [
            {
                "margin": margin,
                "estimator": details.get("stop_estimator"),
                "mass": details.get("stop_matched_mass"),
                "logprob_mass": details.get("stop_logprob_mass"),
            }
        ],
    }


async def main(a: argparse.Namespace) -> None:
    method_config = {
        "record_signals": True,
        "lazy_judge": False,
        "rounds": a.rounds,
        "top_m": a.top_m,
        "max_tokens_turn": a.turn_tokens,
        "max_tokens_judge": a.judge_tokens,
    }
    cfg = runtime.layered_config(CONFIG, variant="radar")
    cfg = cfg.with_overrides({"method_config": method_config, "llm": {"cache_mode": "off"}})
    run = runtime.build_run(runtime.resolve_spec(cfg))
    examples = list(load_dataset("scifact", "train"))[: a.claims]
    sem = asyncio.Semaphore(a.concurrency)
    rows: list[dict[str, Any]] = []

    async def one(ex: Any) -> None:
        async with sem:
            t = time.perf_counter()
            if a.signals_only:
                row = await signals_only(run, ex)
            else:
                v = await run.check(ex.input)
                row = {
                    "label": v.label,
                    "probabilities": v.probabilities,
                    "error": v.error,
                    "decisions": decisions(v),
                    "stops": stop_readings(v),
                }
            rows.append({"id": ex.id, "seconds": round(time.perf_counter() - t, 1), **row})
            print(f"  {ex.id}: {json.dumps(rows[-1], default=str)}", flush=True)

    await asyncio.gather(*(one(ex) for ex in examples))
    report(rows)
    if a.out:
        a.out.write_text(json.dumps(rows, indent=1), encoding="utf-8")


def report(rows: list[dict[str, Any]]) -> None:
    decided = [ok for r in rows for _w, ok in r["decisions"]]
    finals = [ok for r in rows for w, ok in r["decisions"] if w == "verdict"]
    stops = [s for r in rows for s in r["stops"]]
    saturated = [s for s in stops if abs(abs(s["margin"]) - 1.0) < 1e-9]
    errors = sum(1 for r in rows if r["error"])
    print(f"claims {len(rows)} ({errors} with an error); seconds per claim: median "
          f"{statistics.median([r['seconds'] for r in rows]):.0f}")  # fmt: skip
    print(f"label/confidence agreement: {sum(decided)} of {len(decided)} decisions "
          f"({sum(decided) / max(1, len(decided)):.0%}); final verdicts {sum(finals)} of "
          f"{len(finals)}")  # fmt: skip
    by_est: dict[str, int] = {}
    for s in stops:
        by_est[str(s["estimator"])] = by_est.get(str(s["estimator"]), 0) + 1
    masses = [s["mass"] for s in stops if s["estimator"] == "logprobs" and s["mass"] is not None]
    low = [s["logprob_mass"] for s in stops if s["logprob_mass"] is not None]
    print(f"stop readings: {len(stops)} {by_est}; saturated |s| = 1: {len(saturated)} "
          f"({len(saturated) / max(1, len(stops)):.0%})")  # fmt: skip
    if masses:
        print(f"  matched mass of the logprob readings used: median "
              f"{statistics.median(masses):.3f}, min {min(masses):.3f}")  # fmt: skip
    if low:
        print(f"  logprob readings replaced by sampling (mass below the minimum): {len(low)}, "
              f"masses {sorted(round(m, 3) for m in low)}")  # fmt: skip


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--claims", type=int, default=30)
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--top-m", type=int, default=3)
    p.add_argument("--turn-tokens", type=int, default=64)
    p.add_argument("--judge-tokens", type=int, default=96)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--signals-only", action="store_true", help="one stop reading and one "
                   "round-judge ruling per claim over an empty debate")  # fmt: skip
    asyncio.run(main(p.parse_args()))
