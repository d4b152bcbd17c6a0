"""RADAR early stopping vs. a fixed three-round debate: tokens and rounds per claim.

Run: python benchmarks/radar_early_stop.py [--claims 200] [--seed 0] [--settle 0.42 0.13 0.45]

The model is scripted (`veracity.testing.radar`), so no real model is needed and
every figure is exactly reproducible. Each claim gets a round after which it is
"settled", drawn with the `--settle` proportions (default: the share of claims the paper's
LLaMA3-8B run stopped after rounds 1, 2 and 3, its Table 6). Before that round the stop
agent leans CONTINUE (p(STOP) in [0, 0.4]) and the round judge is unsure (confidence in
[0.4, 0.9]); from it on the stop agent leans STOP (p(STOP) in [0.6, 1]) and the judge is
confident (confidence in [0.75, 1]) on the claim's gold label. Debaters write 120-word
turns over ten 60-word evidence passages.

Printed, all measured in one run over the same claims:
1. fixed three rounds (early stopping off) vs. early stopping with the default thresholds
   (τ_s = −0.15, τ_v = 0.7): tokens, LLM calls and rounds per claim, and the ratio;
2. thresholds calibrated offline on the first half of the claims (one recorded pass, then
   the grid search), applied to the second half: predicted vs. measured tokens saved.
"""

from __future__ import annotations

import argparse
import asyncio
import random
from collections import Counter

from veracity.core.types import Claim, Document, Verdict
from veracity.methods.radar import RadarMethod
from veracity.methods.radar.calibration import grid_search, record_from_verdict
from veracity.testing.radar import LABELS, ScriptedRound, radar_script

ROUNDS = 3


def make_claims(n: int, settle: list[float], seed: int):
    """Claims with gold labels and per-round plans (see the module docstring)."""
    rng = random.Random(seed)
    claims, plans, gold = [], {}, {}
    for i in range(n):
        marker = f"claim-{i:04d}"
        label = rng.choice(LABELS)
        settled = rng.choices([1, 2, 3], weights=settle)[0]
        rounds = []
        for r in range(1, ROUNDS + 1):
            if r < settled:
                unsure = rng.choice([x for x in LABELS if x != label])
                rounds.append(ScriptedRound(unsure, rng.uniform(0.4, 0.9), rng.uniform(0.0, 0.4)))
            else:
                rounds.append(ScriptedRound(label, rng.uniform(0.75, 1.0), rng.uniform(0.6, 1.0)))
        evidence = [
            Document(id=f"{marker}-e{j}", text=" ".join([f"fact{j}"] * 60)) for j in range(10)
        ]
        claims.append(Claim(id=marker, text=f"{marker}: the figure rose", evidence=evidence))
        plans[marker] = rounds
        gold[marker] = label
    return claims, plans, gold


async def run(claims, plans, **config) -> list[Verdict]:
    method = RadarMethod(radar_script(plans, argument_words=120), {"evidence": "given", **config})
    return [await method.check(c) for c in claims]


def summary(verdicts: list[Verdict], gold: dict[str, str], ids: list[str]) -> dict:
    n = len(verdicts)
    return {
        "tokens": sum(v.usage.total_tokens for v in verdicts) / n,
        "calls": sum(v.usage.llm_calls for v in verdicts) / n,
        "rounds": sum(v.metadata["rounds_run"] for v in verdicts) / n,
        "accuracy": sum(v.label == gold[i] for v, i in zip(verdicts, ids, strict=True)) / n,
        "stopped": dict(sorted(Counter(v.metadata["rounds_run"] for v in verdicts).items())),
    }


def show(name: str, s: dict) -> None:
    print(
        f"{name:<34} {s['tokens']:>9.1f} {s['calls']:>7.2f} {s['rounds']:>7.2f} "
        f"{s['accuracy']:>9.3f}   {s['stopped']}"
    )


async def main(n: int, seed: int, settle: list[float]) -> None:
    claims, plans, gold = make_claims(n, settle, seed)
    ids = [c.id for c in claims]
    fixed = summary(await run(claims, plans, early_stop=False), gold, ids)
    early = summary(await run(claims, plans), gold, ids)
    head = f"{'':<34} {'tokens':>9} {'calls':>7} {'rounds':>7} {'accuracy':>9}   stopped after"
    print(f"{n} claims, seed {seed}, settled after rounds 1/2/3 with weights {settle}\n")
    print(head)
    show("fixed 3 rounds (early stop off)", fixed)
    show("early stop, default τ_s/τ_v", early)
    print(f"\nearly stop / fixed tokens: {early['tokens'] / fixed['tokens']:.3f} "
          f"(saves {100 * (1 - early['tokens'] / fixed['tokens']):.1f}%); rounds "
          f"{early['rounds'] / fixed['rounds']:.3f}")  # fmt: skip

    half = n // 2
    dev, test = claims[:half], claims[half:]
    recorded = await run(dev, plans, early_stop=False, record_signals=True)
    records = [
        record_from_verdict(c.id, gold[c.id], v.model_dump(mode="json"))
        for c, v in zip(dev, recorded, strict=True)
    ]
    cal = grid_search(records, LABELS)
    tau = {"tau_s": cal.best.tau_s, "tau_v": cal.best.tau_v}
    test_ids = [c.id for c in test]
    fixed_t = summary(await run(test, plans, early_stop=False), gold, test_ids)
    tuned = summary(await run(test, plans, **tau), gold, test_ids)
    print(f"\ncalibrated on {half} claims: τ_s = {tau['tau_s']:+.2f}, τ_v = {tau['tau_v']:.2f} "
          f"(dev macro-F1 {cal.best.macro_f1:.3f} vs {cal.fixed.macro_f1:.3f} every round; "
          f"predicted tokens saved {100 * cal.tokens_saved:.1f}%)")  # fmt: skip
    print(head)
    show(f"fixed 3 rounds, other {len(test)}", fixed_t)
    show("early stop, calibrated τ_s/τ_v", tuned)
    print(f"\nmeasured on the held-out half: calibrated / fixed tokens "
          f"{tuned['tokens'] / fixed_t['tokens']:.3f} "
          f"(saves {100 * (1 - tuned['tokens'] / fixed_t['tokens']):.1f}%)")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--claims", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--settle", type=float, nargs=3, default=[0.42, 0.13, 0.45])
    args = parser.parse_args()
    asyncio.run(main(args.claims, args.seed, args.settle))
