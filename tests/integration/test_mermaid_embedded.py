"""MERMAID end to end on the real embedded model: a SciFact claim, a local index of SciFact
abstracts served by the MCP tool server over stdio, and the evidence memory.

The 135M model is far too small to judge scientific claims; this test checks that the
whole pipeline runs on it — a schema-valid decomposition, executor steps that call the
real tool server, a label in the label space, evidence filed in memory — not the verdict.
"""

from __future__ import annotations

import json

import pytest

from veracity.core.types import Claim
from veracity.runtime import build_run, resolve_spec
from veracity.runtime.home import home_paths

pytestmark = [pytest.mark.embedded, pytest.mark.data, pytest.mark.nlp, pytest.mark.slow]


def _scifact_claim_and_abstracts(root, n_other: int = 30):
    """A SUPPORT claim of SciFact with its cited abstracts plus `n_other` others."""
    from veracity.core.types import Document

    claims = [json.loads(x) for x in (root / "scifact" / "claims_train.jsonl").open()]
    claim = next(c for c in claims if c["evidence"])
    cited = {str(d) for d in claim["evidence"]}
    docs = []
    for line in (root / "scifact" / "corpus.jsonl").open():
        row = json.loads(line)
        if str(row["doc_id"]) in cited or len(docs) < n_other + len(cited):
            text = " ".join(row["abstract"])
            docs.append(Document(id=str(row["doc_id"]), title=row["title"], text=text))
        if len(docs) >= n_other + len(cited) and all(any(d.id == c for d in docs) for c in cited):
            break
    return claim["claim"], docs


async def test_mermaid_checks_a_scifact_claim_on_the_embedded_model(benchmark_data_dir, tmp_path):
    from veracity.retrieval.local.corpus import build_local_corpus

    text, docs = _scifact_claim_and_abstracts(benchmark_data_dir)
    build_local_corpus("scifact-e2e", docs, mode="bm25", indexes_dir=home_paths().indexes)
    flags = {
        "method": "mermaid",
        "labels": "supported_refuted",
        # one llama.cpp thread: several threads stall badly on a busy shared CPU
        "llm": {"n_threads": 1, "n_parallel": 1, "cache_mode": "off"},
        "sources": {"scifact": {"type": "local", "index": "scifact-e2e"}},
        "method_config": {
            "max_steps": 2,
            "memory": {"path": str(tmp_path / "memory.sqlite"), "embedder": None},
        },
    }
    run = build_run(resolve_spec(flags=flags))
    verdict = await run.check(Claim(text=text))
    await run.method.toolbox.aclose()
    assert verdict.error is None, verdict.error
    assert verdict.label in ("SUPPORTED", "REFUTED")
    decomposition = verdict.metadata["decomposition"]
    assert decomposition["triplets"] and decomposition["topics"]
    turns = [e for e in verdict.trace.of_kind("agent_turn") if e.name == "executor"]
    assert turns and turns[-1].data["action"] == "answer"
    found: set[str] = set()
    for event in verdict.trace.of_kind("tool_call"):  # each call reached the tool server
        assert event.data["tool"] == "search_scifact" and event.data["error"] is None
        found.update(event.data["documents"])
    counters = verdict.metadata["counters"]
    assert verdict.usage.searches == counters["tool_calls"]
    stats = run.method.memory().stats()
    assert stats.recalls == 1
    # what the executor kept of what the tools found was filed in memory
    assert counters["evidence_retrieved"] == len(found)
    assert stats.entries == counters["evidence_kept"] <= len(found)
