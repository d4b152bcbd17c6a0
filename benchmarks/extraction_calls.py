"""Claim extraction's cost and quality, window mode against sentence mode (issue 42, item 1).

Runs only the claim-extraction stage (no claim is checked) on the first answers of the
two document sets (FacTool-QA and Factcheck-Bench), each in both modes, on the embedded
model (or the ``llm:`` of the default config), replies not cached. Every request that
reaches the model is counted (structured-output retries and window fallbacks included),
with its prompt and completion tokens. Recall and precision are the document task's:
extracted claims (every category) matched one to one to the annotated claims by
`greedy_match`, with the task's default matcher (``auto``: cosine similarity of
all-MiniLM-L6-v2 embeddings at or above 0.7, or word overlap at or above 0.5 when the
embedder is missing; the one used is printed). Prints one JSON line per answer and mode,
then a summary per set and mode; reads VERACITY_DATA_DIR.

    VERACITY_DATA_DIR=PATH/TO/DATA nice -n 10 python benchmarks/extraction_calls.py --limit 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

from veracity.core.config import LLMConfig
from veracity.core.errors import StructuredOutputError
from veracity.datasets import load_dataset
from veracity.evaluation.document_metrics import greedy_match
from veracity.evaluation.document_task import ClaimMatcher, DocumentTaskConfig
from veracity.evidence.claims import ClaimExtractor, ExtractionConfig
from veracity.llm.factory import build_backend, build_llm
from veracity.runtime import resolve_llm
from veracity.runtime.home import home_paths

SETS = ("factool_qa_documents", "factcheck_bench_documents")
MODES = ("sentence", "window")


class Counting:
    """The backend, each request it answers counted with its tokens."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.calls = self.prompt_tokens = self.completion_tokens = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def complete(self, request: Any) -> Any:
        self.calls += 1
        response = await self.inner.complete(request)
        self.prompt_tokens += response.usage.prompt_tokens
        self.completion_tokens += response.usage.completion_tokens
        return response


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--sets", nargs="*", default=list(SETS))
    ap.add_argument("--modes", nargs="*", default=list(MODES))
    ap.add_argument("--extraction", default="{}", help="other ExtractionConfig fields, as JSON")
    args = ap.parse_args()
    spec = resolve_llm(LLMConfig())
    counter = Counting(build_backend(spec, None, home_paths().models))
    llm = build_llm(spec, backend=counter)  # no cache path, no user cache: nothing cached
    task = DocumentTaskConfig()
    matcher = ClaimMatcher(task.match, task.embedder)
    threshold = task.threshold(matcher.name)
    summary: dict[str, Any] = {"model": spec.model, "matcher": matcher.name,
                               "threshold": threshold, "answers_per_set": args.limit,
                               "extraction": json.loads(args.extraction)}  # fmt: skip
    for name in args.sets:
        data = load_dataset(name, data_dir=os.environ.get("VERACITY_DATA_DIR"))
        examples = list(data)[: args.limit]
        for mode in args.modes:
            config = ExtractionConfig(**{**json.loads(args.extraction), "mode": mode})
            extractor = ClaimExtractor(llm, config)
            t = dict.fromkeys(("calls", "prompt", "completion", "gold", "claims", "matched",
                               "failed", "fallbacks", "sentences"), 0)  # fmt: skip
            for ex in examples:
                question = (ex.input.context or "").removeprefix("answer to the question: ")
                gold = [g["text"] for g in ex.metadata.get("gold_claims") or []]
                before = (counter.calls, counter.prompt_tokens, counter.completion_tokens)
                try:
                    found = await extractor.extract(ex.input.text, question=question or None)
                    texts = [c.text for c in found.claims]
                    t["fallbacks"] += found.window_fallbacks
                    t["sentences"] += len(found.sentences)
                except StructuredOutputError:  # counted as an answer with no claims
                    texts, found = [], None
                    t["failed"] += 1
                pairs = greedy_match(matcher.similarity(texts, gold), threshold) if texts else []
                calls = counter.calls - before[0]
                t["calls"] += calls
                t["prompt"] += counter.prompt_tokens - before[1]
                t["completion"] += counter.completion_tokens - before[2]
                t["gold"] += len(gold)
                t["claims"] += len(texts)
                t["matched"] += len(pairs)
                row = {"set": name, "mode": mode, "id": ex.id, "calls": calls,
                       "gold": len(gold), "claims": len(texts), "matched": len(pairs),
                       "failed": found is None,
                       "fallbacks": found.window_fallbacks if found else None}  # fmt: skip
                print(json.dumps(row), flush=True)
            n = len(examples)
            summary[f"{name}/{mode}"] = {
                "answers": n,
                "sentences_per_answer": round(t["sentences"] / n, 2),
                "extraction_calls_per_answer": round(t["calls"] / n, 2),
                "prompt_tokens_per_answer": round(t["prompt"] / n, 1),
                "completion_tokens_per_answer": round(t["completion"] / n, 1),
                "claims_per_answer": round(t["claims"] / n, 2),
                "recall": round(t["matched"] / t["gold"], 3) if t["gold"] else None,
                "precision": round(t["matched"] / t["claims"], 3) if t["claims"] else None,
                "failed_answers": t["failed"],
                "window_fallbacks": t["fallbacks"],
            }
    summary["loadavg_at_end"] = Path("/proc/loadavg").read_text().split()[:3]
    print(json.dumps(summary, indent=1), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
