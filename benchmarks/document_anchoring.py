"""Claims dropped as unanchored, claims checked and extraction recall/precision per answer,
with anchoring and the check-worthiness rule on and off (issue 41, item 4).

Runs only the claim-extraction stage (no claim is checked) with the run's default model
(the embedded one unless configured otherwise) on the first answers of a document set
(or the shortest, `--pick shortest`), each twice: anchoring off ("before") and on
("after"). The model's replies are cached, so the second pass reuses the first's
decomposition and rewrites and costs one check-worthiness call. "Checked" counts the
claims that would be sent to a claim method: before, the claims the model itself called
factual; after, those the check-worthiness rule keeps (`confident_not_factual`).
Recall and precision are the document task's (`greedy_match`, the task's matcher and
threshold). Prints one JSON line per answer and a summary; reads VERACITY_DATA_DIR.

    VERACITY_DATA_DIR=PATH/TO/DATA python benchmarks/document_anchoring.py \\
        factool_qa_documents --limit 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path

from veracity.core.config import RunConfig
from veracity.datasets import load_dataset
from veracity.evaluation.document_metrics import greedy_match
from veracity.evaluation.document_task import ClaimMatcher, DocumentTaskConfig
from veracity.evidence.claims import ClaimExtractor, ExtractionConfig
from veracity.runtime import build_llm


def _score(texts: list[str], gold: list[str], matcher: ClaimMatcher, threshold: float):
    pairs = greedy_match(matcher.similarity(texts, gold), threshold) if texts and gold else []
    return len(pairs), len(gold), len(texts)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--limit", type=int, default=3)
    ap.add_argument("--pick", choices=("first", "shortest"), default="first")
    args = ap.parse_args()
    examples = list(load_dataset(args.dataset, data_dir=os.environ.get("VERACITY_DATA_DIR")))
    if args.pick == "shortest":
        examples.sort(key=lambda e: len(e.input.text))
    examples = examples[: args.limit]
    task = DocumentTaskConfig()
    matcher = ClaimMatcher(task.match, task.embedder)
    threshold = task.threshold(matcher.name)
    llm = build_llm(RunConfig())
    totals: dict[str, list[int]] = {}
    for ex in examples:
        question = (ex.input.context or "").removeprefix("answer to the question: ").strip()
        gold = [g["text"] for g in ex.metadata.get("gold_claims") or []]
        row: dict = {"id": ex.id, "chars": len(ex.input.text), "gold": len(gold)}
        for name, on in (("before", False), ("after", True)):
            started = time.perf_counter()
            ext = ClaimExtractor(llm, ExtractionConfig(anchoring=on))
            found = await ext.extract(ex.input.text, question=question or None)
            texts = [c.text for c in found.claims]
            if on:
                checked = sum(c.checkworthy for c in found.claims)
            else:  # the model's own categories decide
                checked = sum((c.model_category or c.category) == "factual" for c in found.claims)
            matched, n_gold, n_ext = _score(texts, gold, matcher, threshold)
            row[name] = {
                "claims": n_ext, "checked": checked, "dropped_unanchored": len(found.dropped),
                "reattached": found.reattached, "matched": matched,
                "dropped": [c.text for c in found.dropped],
                "seconds": round(time.perf_counter() - started, 1),
            }  # fmt: skip
            for key, value in (("claims", n_ext), ("checked", checked), ("matched", matched),
                               ("dropped", len(found.dropped)), ("gold", n_gold)):  # fmt: skip
                totals.setdefault(f"{name}.{key}", []).append(value)
        print(json.dumps(row), flush=True)
    n = len(examples)
    summary = {"answers": n, "matcher": matcher.name, "threshold": threshold}
    for name in ("before", "after"):
        t = {k.split(".", 1)[1]: sum(v) for k, v in totals.items() if k.startswith(name)}
        summary[name] = {
            "claims_per_answer": round(t.get("claims", 0) / n, 2),
            "checked_per_answer": round(t.get("checked", 0) / n, 2),
            "dropped_unanchored_per_answer": round(t.get("dropped", 0) / n, 2),
            "recall": round(t["matched"] / t["gold"], 3) if t.get("gold") else None,
            "precision": round(t["matched"] / t["claims"], 3) if t.get("claims") else None,
        }
    summary["loadavg"] = Path("/proc/loadavg").read_text().split()[:3]
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
