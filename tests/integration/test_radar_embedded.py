"""RADAR end to end on the real embedded model over a small local corpus (dense, MiniLM).

Slow on a laptop CPU (a few minutes): every agent turn, stop check and judge ruling is a
real SmolLM2-135M generation. The model is far too small to judge claims well; this test
checks that the whole pipeline runs, not the verdict.
"""

from __future__ import annotations

import datetime as dt

import pytest

from veracity.core.config import LLMConfig
from veracity.core.types import Claim, Document
from veracity.llm.factory import build_llm
from veracity.methods.radar import RadarMethod
from veracity.retrieval.local.corpus import build_local_corpus
from veracity.runtime import resolve_llm
from veracity.runtime.home import home_paths

pytestmark = [pytest.mark.embedded, pytest.mark.nlp, pytest.mark.slow]

DOCS = [
    Document(
        id="auction",
        title="Boxer's gold medal sold for charity",
        text="In 2012 Wladimir Klitschko put his 1996 Olympic gold medal up for a charity "
        "auction. It fetched one million dollars, which went to his foundation's sport "
        "programmes for children in Ukraine.",
        published_at=dt.datetime(2012, 6, 1),
    ),
    Document(
        id="returned",
        title="Medal handed back",
        text="The buyer of the Klitschko gold medal later returned it to the boxer.",
        published_at=dt.datetime(2012, 7, 1),
    ),
    Document(
        id="war",
        title="Invasion of Ukraine",
        text="Russia began its full-scale invasion of Ukraine in February 2022.",
        published_at=dt.datetime(2022, 3, 1),
    ),
    Document(
        id="later",
        title="Written after the claim",
        text="A fact-check of the Klitschko medal story, published after the claim.",
        published_at=dt.datetime(2022, 6, 1),
    ),
    Document(id="noise", text="Heavy rain is expected in Lisbon next week."),
]


async def test_radar_checks_a_claim_on_the_embedded_model_with_a_local_dense_corpus(tmp_path):
    build_local_corpus("radar-e2e", DOCS, mode="dense", indexes_dir=tmp_path)
    config = {
        "corpus": {"index": "radar-e2e", "indexes_dir": str(tmp_path)},
        "top_m": 3,
        "rounds": 2,
        "max_tokens_turn": 64,
    }
    method = RadarMethod(
        build_llm(resolve_llm(LLMConfig(cache_mode="off")), models_dir=home_paths().models), config
    )
    claim = Claim(
        text="Wladimir Klitschko auctioned his Olympic medal to help the children of Ukraine.",
        date=dt.date(2022, 4, 1),
    )
    verdict = await method.check(claim)

    assert verdict.error is None, verdict.error
    assert verdict.label in ("TRUE", "HALF-TRUE", "FALSE") and verdict.rationale
    meta = verdict.metadata
    assert 1 <= meta["rounds_run"] <= 2 and meta["estimator"] == "logprobs"
    first = meta["signals"][0]
    assert -1.0 <= first["stop_margin"] <= 1.0
    # a logprob reading that matched too little mass (min_matched_mass) is sampled instead
    if first["stop_estimator"] == "sampling":
        assert first["stop_logprob_mass"] < 0.5
    else:
        assert first["stop_estimator"] == "logprobs" and first["stop_matched_mass"] >= 0.5
    ids = [e.document.metadata["parent_id"] for e in verdict.evidence]
    assert len(ids) == 3 and "later" not in ids  # the claim date is the cutoff
    assert verdict.confidence is not None and 0.0 < verdict.confidence <= 1.0
    assert meta["tokens"] == verdict.usage.total_tokens > 0
    assert verdict.trace.of_kind("search") and verdict.usage.llm_calls >= 4
