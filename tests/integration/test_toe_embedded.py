"""ToE end to end on the real embedded model: one invented claim, a local fact-check index,
training on the collected tree, and the saved networks scoring the tree's evidence.

The 135M model cannot fact-check; this test checks that the whole pipeline runs on it —
features, retrieval through the fact-check action (the others are masked: no source),
evidence evaluation, the LLM judge's scores, a verdict in the label space, a checkpoint
that fits and reloads — not the verdict itself. The search is bounded so that one claim
takes well under a minute on a small CPU.
"""

from __future__ import annotations

import pytest

from veracity.core.types import Claim, Document
from veracity.datasets import DatasetInfo, Example
from veracity.evaluation.training import collect
from veracity.methods.toe.models import ToEModels
from veracity.methods.toe.training import ToETrainer
from veracity.methods.toe.tree import ArgumentTree
from veracity.runtime import build_run, resolve_spec
from veracity.runtime.home import home_paths

pytestmark = [pytest.mark.embedded, pytest.mark.slow]

# Invented: no real town, canal or council.
CLAIM = "The town of Brellin opened a 40 km flood canal in 2019, paid for by the state."
DOCS = [
    Document(
        id="fc1",
        title="Fact check: the Brellin canal",
        url="https://checks.example.org/brellin-canal",
        text="Rated false. The Brellin canal is 12 km long, not 40 km, and it opened in 2021.",
    ),
    Document(
        id="fc2",
        title="Brellin council minutes",
        url="https://brellin.gov.example/minutes",
        text="The council paid for the Brellin flood canal from its own budget; the state "
        "gave nothing towards it.",
    ),
]
BOUNDED = {  # configs/toe_embedded_bounded.yaml, smaller still
    "max_iterations": 1,
    "max_subclaims": 2,
    "max_search_steps": 1,
    "max_docs_per_node": 2,
    "results_per_action": 2,
    "max_chunks_per_doc": 1,
    "query_per_action": False,
}


async def test_toe_checks_trains_and_reloads_on_the_embedded_model(tmp_path):
    from veracity.retrieval.local.corpus import build_local_corpus

    build_local_corpus("toe-e2e", DOCS, mode="bm25", indexes_dir=home_paths().indexes)
    flags = {
        "method": "toe",
        "labels": "true_uncertain_false",
        "llm": {"n_threads": 1, "n_parallel": 1, "cache_mode": "off"},
        "sources": {"factcheck": {"type": "local", "index": "toe-e2e"}},
        "method_config": {**BOUNDED, "scorer": "llm_judge", "aggregator": "rules"},
    }
    run = build_run(resolve_spec(flags=flags))
    folder = tmp_path / "ckpt"
    trainer = ToETrainer.open(run.method, folder)
    info = DatasetInfo(
        name="toy", label_space="true_uncertain_false", splits=("train",), input_kind="claim",
        folder="toy",
    )  # fmt: skip
    example = Example(
        id="b1", input=Claim(id="b1", text=CLAIM), label="false",
        label_space="true_uncertain_false",
    )  # fmt: skip
    verdicts = []
    got = await collect(
        trainer, [example], info, run.method.label_space, lambda rec, v: verdicts.append(v)
    )
    assert got == 1
    (verdict,) = verdicts
    assert verdict.error is None, verdict.error
    assert verdict.label in run.method.label_space.labels
    meta = verdict.metadata
    assert set(meta["masked_actions"]) == {"web", "counter", "arxiv", "wiki", "social", "reddit"}
    assert meta["nodes"] >= 1 and meta["iterations"] == 1
    tree = ArgumentTree.from_dict(meta["tree"])
    root = tree.root
    assert root.features is not None and root.evaluated_at == 1
    assert root.scorer == "llm_judge" and 0.0 <= root.self_v <= 1.0
    searches = [e for e in verdict.trace.of_kind("search") if e.name == "factcheck"]
    assert searches and searches[0].data["results"], "the fact-check index gave nothing"
    read = [e for e in verdict.trace.of_kind("llm_call") if e.name.startswith("toe:clean")]
    assert len(read) == len(searches[0].data["results"])  # each document was read
    # the 135M model's statements often fail the quote check and are dropped; what is
    # kept came from the fact-check action, and its source names the index that found it
    assert {(e.source, e.action) for e in root.evidence} <= {("local:toe-e2e", "factcheck")}

    metrics = trainer.fit({"dataset": "toy", "split": "train", "claims": 1})
    assert metrics["eval_net"]["samples"] >= 1
    models = ToEModels.load(run.method.config, folder)
    assert models.trained["eval_net"]
    v, r = models.score(root.features, root.evidence)
    assert 0.0 <= v <= 1.0 and 0.0 <= r <= 1.0
