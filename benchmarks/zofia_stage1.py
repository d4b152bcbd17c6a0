"""ZoFia stage 1 keyword extraction time, and stage 2 overlap against its critical path.

Run: python benchmarks/zofia_stage1.py [--articles 50] [--seed 0] [--latency 0.2]
     [--data-dir DIR]

Part 1 (needs PolitiFact++ under the data directory, spaCy's small English pipeline and
the offline all-MiniLM-L6-v2): for `--articles` articles drawn with `--seed` from the
human-written split, time ZoFia's keyword extraction (NER with the dynamic threshold,
hierarchical salience, SC-MMR), per article, on this CPU, after one warm-up article so
that loading spaCy and the encoder is reported apart. The paper reports 0.114 s per
article on a V100. It also counts the keywords SC-MMR keeps with the two readings of
Algorithm 3's first stopping test ("seed": the seed's own MMR score; 1.0: the literal
initial value), over the same salience scores.

Part 2 (no model needed): stage 2 with a scripted model that answers every call after a
fixed `--latency`. The linguist's five calls, the expert's triage → analysis and the claim
extractor → verifiers are independent branches; run concurrently, stage 2 should take
about its critical path (the longest branch: two calls), not the sum of all calls.
Printed: the measured wall time against the critical path and against the serial sum.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from pathlib import Path

from veracity.core.types import Article, Document
from veracity.datasets import load_dataset
from veracity.methods.zofia import ZoFiaMethod
from veracity.methods.zofia.config import ZoFiaConfig
from veracity.methods.zofia.retrieval import EntityGuidedRetrieval, Stage1Result
from veracity.nlp.embeddings import HashingEmbedder, get_embedder
from veracity.nlp.keywords import select_keywords
from veracity.runtime.environment import data_dir
from veracity.testing import InMemoryEncyclopedia, InMemorySource, ScriptedLLM, ScriptedReply


def article_text(a: Article) -> str:
    return f"{a.title}\n\n{a.body}" if a.title else a.body


async def stage1(n: int, seed: int, data_dir: Path | None) -> None:
    examples = list(load_dataset("politifact_plusplus", "human", data_dir=data_dir))
    random.Random(seed).shuffle(examples)
    texts = [article_text(ex.input) for ex in examples[: n + 1]]
    cfg = ZoFiaConfig()
    t0 = time.perf_counter()
    embedder = get_embedder(cfg.embedder)
    retrieval = EntityGuidedRetrieval(cfg, ScriptedLLM(), embedder)
    await retrieval.keywords_from_entities(texts[0])  # warm-up: loads spaCy and the encoder
    load = time.perf_counter() - t0

    # the same SC-MMR settings as ZoFia's, with Algorithm 3's literal initial MMR*_prev
    literal_config = retrieval._scmmr().model_copy(update={"mmr_prev_init": 1.0})
    times, counts, literal, words, kept = [], [], [], [], []
    for text in texts[1:]:
        t = time.perf_counter()
        keywords, info = await retrieval.keywords_from_entities(text)
        times.append(time.perf_counter() - t)
        counts.append(len(keywords))
        kept.append([k.text for k in keywords])
        words.append(len(text.split()))
        salience = info.get("salience") or {}
        if salience:
            lit = select_keywords(salience, embedder=embedder, config=literal_config)
            literal.append(len(lit.selected))
        else:
            literal.append(0)

    times.sort()
    print(f"Stage 1 keyword extraction, {len(times)} PolitiFact++ human-written articles")
    print(f"  article length (words): median {statistics.median(words):.0f}, max {max(words)}")
    print(f"  first article incl. loading spaCy + encoder: {load:.2f} s")
    print(
        f"  per article: mean {statistics.mean(times):.3f} s, "
        f"p50 {times[len(times) // 2]:.3f} s, p95 {times[int(0.95 * (len(times) - 1))]:.3f} s "
        f"(paper, V100: 0.114 s)"
    )
    print("  keywords kept by SC-MMR (mean / distribution):")
    for name, xs in (("seed (default)", counts), ("literal 1.0", literal)):
        dist = {k: xs.count(k) for k in sorted(set(xs))}
        print(f"    {name:15s} {statistics.mean(xs):.2f}  {json.dumps(dist)}")
    keyword_statistics(kept)


def keyword_statistics(kept: list[list[str]]) -> None:
    """What the kept keywords look like, and how many AND queries cannot match.

    A keyword that spans a line break ("Bloomberg\\n\\nThe Best Of") is quoted as one
    phrase in the conjunctive query; no indexed page has that phrase, so the whole AND
    query comes back empty. Such a query, or one with no keyword at all, counts as empty.
    """
    flat = [k for ks in kept for k in ks]
    broken = [k for k in flat if "\n" in k]
    hit = sum(1 for ks in kept if any("\n" in k for k in ks))
    none = sum(1 for ks in kept if not ks)
    lengths = [len(k.split()) for k in flat] or [0]
    print(
        f"  keywords: {len(flat)} in {len(kept)} articles; words per keyword: mean "
        f"{statistics.mean(lengths):.2f}, max {max(lengths)}; longer than 4 words: "
        f"{sum(1 for n in lengths if n > 4)}"
    )
    print(f"  keywords spanning a line break: {len(broken)} (in {hit} articles) {broken[:3]!r}")
    print(
        f"  empty AND queries (no keyword, or a keyword across a line break): "
        f"{hit + none} of {len(kept)} ({(hit + none) / len(kept):.0%}; {none} with no keyword)"
    )


def scripted(latency: float, sub_claims: int) -> ScriptedLLM:
    def reply(obj):
        return ScriptedReply(json.dumps(obj))

    llm = ScriptedLLM(latency_s=latency)
    llm.on(".*", reply({"analysis": "plain wording", "judgment": "REAL"}), tag="linguist")
    llm.on(".*", reply({"domain": "politics", "expert": "a policy analyst"}), tag="expert:triage")
    llm.on(
        ".*",
        reply({"knowledge_concordance": "fits", "logical_integrity": "sound", "judgment": "REAL"}),
        tag="expert:analysis",
    )
    llm.on(
        ".*",
        reply(
            {
                "core_claim": "The bill passed.",
                "sub_claims": [f"Detail {i} holds." for i in range(sub_claims)],
            }
        ),
        tag="claim_extractor",
    )
    llm.on(
        ".*",
        reply({"label": "Supports", "reason": "the record says so", "quotes": []}),
        tag="claim_verifier",
    )
    return llm


async def stage2(latency: float, sub_claims: int, repeats: int) -> None:
    web = [
        Document(id=f"w{i}", title=f"result {i}", text=f"The bill passed the senate, report {i}.")
        for i in range(10)
    ]
    stage1_result = Stage1Result(mode="entities", web=web)
    news = "The senate passed the bill on Tuesday after a long debate."
    walls, calls = [], 0
    for _ in range(repeats):
        llm = scripted(latency, sub_claims)
        method = ZoFiaMethod(
            llm=llm,
            config={"variant": "no_debate"},
            sources={"web": InMemorySource([])},
            encyclopedia=InMemoryEncyclopedia([]),
            embedder=HashingEmbedder(),  # keeps encoder time out of the overlap figure
        )
        # a non-caching managed model so every repeat pays every call
        method.llm.cache = None
        t = time.perf_counter()
        pool = await method._analyses(news, stage1_result, None)
        walls.append(time.perf_counter() - t)
        calls = len(llm.calls)
        assert len(pool.linguist) == 5 and len(pool.claims) == 1 + sub_claims
    critical = 2 * latency  # expert: triage -> analysis; claims: extraction -> verification
    serial = calls * latency
    wall = statistics.median(walls)
    print(
        f"\nStage 2 with a fixed-latency model ({latency:.2f} s per call, {calls} calls, "
        f"median of {repeats} runs, concurrency limit {method.llm.max_concurrency})"
    )
    print(f"  wall {wall:.3f} s; critical path {critical:.3f} s; serial sum {serial:.3f} s")
    print(f"  wall / critical path = {wall / critical:.2f}; serial / wall = {serial / wall:.2f}x")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--articles", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--sub-claims", type=int, default=3)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--skip-stage1", action="store_true", help="only the stage 2 part")
    p.add_argument("--skip-stage2", action="store_true", help="only the stage 1 part")
    a = p.parse_args()
    if not a.skip_stage1:
        asyncio.run(stage1(a.articles, a.seed, data_dir(a.data_dir)))
    if not a.skip_stage2:
        asyncio.run(stage2(a.latency, a.sub_claims, a.repeats))


if __name__ == "__main__":
    main()
