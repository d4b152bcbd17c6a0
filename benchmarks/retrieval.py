"""Local-corpus retrieval on SciFact: build time, query latency and recall of gold abstracts.

Run: python benchmarks/retrieval.py [--granularity doc|chunk|both] [--chunk-words 100]
     [--rebuild] [--latency-queries 200] [--torch-threads N]

Uses the 5,183-abstract corpus and the train claims in ``$VERACITY_DATA_DIR/scifact``.
Indexes are kept under ``settings().indexes_dir`` (``bench-scifact-<granularity>``) and
reused; ``--rebuild`` rebuilds them and times the build. Prints, from one run:

- build time of a BM25-only index and of a hybrid index (BM25 + embeddings), and the
  time spent embedding;
- query-embedding latency alone, then query latency p50/p95 per mode (bm25, dense,
  hybrid) and query type (free text, AND keywords, OR keywords, text with a date cutoff
  and a domain rule), with ratios to BM25. The embedder's in-memory cache is cleared
  before each mode's pass; within a pass "keywords OR" reuses the query embedding of
  "keywords AND" and "text+cutoff+domain" that of "text" (same query strings), so those
  two rows show the search cost without embedding the query;
- recall@10 and recall@20 of gold abstracts per mode, at document level (chunks of one
  abstract count once), for two gold definitions: the keys of ``evidence`` (claims with
  non-empty evidence) and ``cited_doc_ids`` (all claims).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import statistics
import time
from pathlib import Path

from veracity.nlp.embeddings import get_embedder
from veracity.retrieval.base import Query
from veracity.retrieval.local.corpus import LocalCorpus, build_local_corpus, index_folder
from veracity.retrieval.local.docs import read_scifact_corpus
from veracity.retrieval.local.index import ChunkingConfig, IndexNotFound, tokenize
from veracity.runtime.environment import data_dir
from veracity.runtime.environment import environment as settings
from veracity.runtime.home import home_paths

MODES = ("bm25", "dense", "hybrid")


def load_claims(folder: Path) -> list[dict]:
    with (folder / "claims_train.jsonl").open() as fh:
        return [json.loads(line) for line in fh if line.strip()]


def build(
    name: str, folder: Path, chunk_words: int, mode: str, rebuild: bool
) -> tuple[float, float]:
    """Build (or reuse) an index; returns (build seconds, embedding seconds)."""
    target = index_folder(name, indexes_dir=home_paths().indexes)
    if not rebuild and (target / "manifest.json").exists():
        corpus = LocalCorpus(name, indexes_dir=home_paths().indexes)
        m = corpus.manifest
        print(f"  reusing {name} (build time from its manifest)")
        return m.build_seconds, m.embed_seconds
    docs = list(read_scifact_corpus(folder / "corpus.jsonl"))
    started = time.perf_counter()
    corpus = build_local_corpus(
        name,
        docs,
        mode=mode,
        chunking=ChunkingConfig(max_words=chunk_words),
        overwrite=True,
        indexes_dir=home_paths().indexes,
    )
    total = time.perf_counter() - started
    return total, corpus.manifest.embed_seconds


def keyword_pair(claim: str) -> tuple[str, str]:
    words = sorted(set(re.findall(r"[A-Za-z][A-Za-z-]{3,}", claim)), key=len, reverse=True)
    words = [w for w in words if tokenize(w)] or ["protein", "cell"]
    return (words[0], words[1] if len(words) > 1 else words[0])


def query_types(claim: str) -> dict[str, Query]:
    a, b = keyword_pair(claim)
    return {
        "text": Query(text=claim, top_k=10),
        "keywords AND": Query(keywords=(a, b), operator="AND", top_k=10),
        "keywords OR": Query(keywords=(a, b), operator="OR", top_k=10),
        "text+cutoff+domain": Query(
            text=claim, top_k=10, before=dt.date(2015, 1, 1), exclude_domains=("example.com",)
        ),
    }


def clear_embedding_cache() -> None:
    cache = getattr(get_embedder(), "_cache", None)  # so every mode pays for query embedding
    if cache is not None:
        cache.clear()


def latency(corpus: LocalCorpus, claims: list[dict], n: int) -> dict[tuple[str, str], list[float]]:
    out: dict[tuple[str, str], list[float]] = {}
    sample = claims[:n]
    for mode in MODES:
        clear_embedding_cache()
        for claim in sample:
            for qtype, query in query_types(claim["claim"]).items():
                started = time.perf_counter()
                corpus.search_sync(query, mode)
                out.setdefault((mode, qtype), []).append(time.perf_counter() - started)
    return out


def query_embedding_latency(claims: list[dict]) -> list[float]:
    clear_embedding_cache()
    embedder = get_embedder()
    out = []
    for claim in claims:
        started = time.perf_counter()
        embedder.embed([claim["claim"] + " (timing)"])
        out.append(time.perf_counter() - started)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def recall(corpus: LocalCorpus, claims: list[dict], mode: str, gold_key: str) -> dict[int, float]:
    hits = {10: 0.0, 20: 0.0}
    used = 0
    for claim in claims:
        gold = (
            set(claim["evidence"])
            if gold_key == "evidence"
            else set(map(str, claim["cited_doc_ids"]))
        )
        if not gold:
            continue
        used += 1
        docs = corpus.search_sync(Query(text=claim["claim"], top_k=20), mode)
        ranked = [d.metadata["parent_id"] for d in docs]
        for k in hits:
            hits[k] += len(gold & set(ranked[:k])) / len(gold)
    return {k: v / used for k, v in hits.items()} | {"n": used}


def report(label: str, name: str, claims: list[dict], args: argparse.Namespace) -> None:
    corpus = LocalCorpus(name, max_chunks_per_doc=1, indexes_dir=home_paths().indexes)
    m = corpus.manifest
    print(f"\n== {label}: {m.documents} abstracts, {m.chunks} chunks, embedder {m.embedder}")
    lat = latency(corpus, claims, args.latency_queries)
    embed = query_embedding_latency(claims[: args.latency_queries])
    p50, p95 = pct(embed, 0.5) * 1e3, pct(embed, 0.95) * 1e3
    print(f"query embedding alone: p50 {p50:.2f} ms, p95 {p95:.2f} ms")
    print(f"query latency over {args.latency_queries} claims (ms): p50 / p95 / p50 ratio to bm25")
    for qtype in query_types("x y z"):
        base = statistics.median(lat[("bm25", qtype)])
        for mode in MODES:
            v = lat[(mode, qtype)]
            print(
                f"  {qtype:20s} {mode:6s} {pct(v, 0.5) * 1e3:8.2f} {pct(v, 0.95) * 1e3:8.2f}"
                f"   x{statistics.median(v) / base:6.2f}"
            )
    print("recall of gold abstracts (document level):")
    for gold_key in ("evidence", "cited_doc_ids"):
        for mode in MODES:
            r = recall(corpus, claims, mode, gold_key)
            print(
                f"  gold={gold_key:13s} {mode:6s} claims={r['n']:4d}  "
                f"R@10={r[10]:.3f}  R@20={r[20]:.3f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--granularity", choices=["doc", "chunk", "both"], default="both")
    parser.add_argument("--chunk-words", type=int, default=100)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--latency-queries", type=int, default=200)
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=None,
        help="torch.set_num_threads for the whole run (default: torch's own choice)",
    )
    args = parser.parse_args()
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    folder = data_dir() / "scifact"
    claims = load_claims(folder)
    import torch

    print(f"SciFact: {len(claims)} train claims; indexes in {settings().indexes_dir}")
    print(f"torch threads: {torch.get_num_threads()}")
    plans = {"doc": 100_000, "chunk": args.chunk_words}
    chosen = plans if args.granularity == "both" else {args.granularity: plans[args.granularity]}
    for gran, words in chosen.items():
        print(f"\n-- building ({gran} level, max {words} words per chunk)")
        b_total, _ = build(f"bench-scifact-{gran}-bm25", folder, words, "bm25", args.rebuild)
        h_total, h_embed = build(f"bench-scifact-{gran}", folder, words, "hybrid", args.rebuild)
        print(f"  bm25 index:   {b_total:7.2f} s")
        ratio = h_total / b_total
        print(f"  hybrid index: {h_total:7.2f} s (embedding {h_embed:.2f} s)  x{ratio:.1f}")
    for gran, words in chosen.items():
        try:
            report(f"{gran} level (max {words} words)", f"bench-scifact-{gran}", claims, args)
        except IndexNotFound as exc:
            print(f"skipped {gran}: {exc}")


if __name__ == "__main__":
    main()
