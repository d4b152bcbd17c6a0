"""S2MAD stance scoring alone: how many replies get a usable score (issue 11's figure).

Run: python benchmarks/s2mad_stance.py [--threads 25] [--no-rescore-singly]
     [--batch-size 10] [--out FILE]

Scores the replies of the first `--threads` RumourEval 2017 dev threads with S2MAD's
stance scorer on the configured model (the embedded one by default), with S2MAD's
defaults (batches of 10, two batched asks, then one ask per still-unscored reply unless
`--no-rescore-singly`). No debate is run. The LLM cache is off, so each run calls the
model. Printed per thread and in total: replies scored, unscored, and calls made.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from veracity.core import context
from veracity.core.config import LLMConfig
from veracity.datasets import load_dataset
from veracity.llm.factory import build_llm
from veracity.methods.s2mad.config import S2MADConfig
from veracity.methods.s2mad.stance import StanceScorer, StanceScoringError
from veracity.runtime import resolve_llm
from veracity.runtime.home import home_paths


async def main(a: argparse.Namespace) -> None:
    cfg = S2MADConfig(stance_batch_size=a.batch_size, stance_rescore_singly=a.rescore_singly)
    llm = build_llm(resolve_llm(LLMConfig(cache_mode="off")), models_dir=home_paths().models)
    scorer = StanceScorer.from_config(llm, cfg)
    rows = []
    for ex in list(load_dataset("rumoureval2017", "dev"))[: a.threads]:
        post = ex.input
        t = time.perf_counter()
        with context.check_context():
            try:
                outcome = await scorer.score(post.text, post.replies)
                scored, unscored, calls = len(outcome.scored), len(outcome.errors), outcome.calls
            except StanceScoringError:  # no reply of the thread got a score
                scored, unscored, calls = 0, len(post.replies), -1
        rows.append(
            {"id": ex.id, "replies": len(post.replies), "scored": scored, "unscored": unscored,
             "calls": calls, "seconds": round(time.perf_counter() - t, 1)}
        )  # fmt: skip
        print(json.dumps(rows[-1]), flush=True)
    total = sum(r["replies"] for r in rows)
    scored = sum(r["scored"] for r in rows)
    print(
        f"threads {len(rows)}, replies {total}: scored {scored} ({scored / max(1, total):.1%}), "
        f"unscored {total - scored}; rescore singly: {a.rescore_singly}"
    )
    if a.out:
        a.out.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=25)
    p.add_argument("--batch-size", type=int, default=10)
    p.add_argument("--rescore-singly", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--out", type=Path, default=None)
    asyncio.run(main(p.parse_args()))
