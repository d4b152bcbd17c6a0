"""ZoFia end to end on the embedded model, a PolitiFact++ article, and a local corpus of
other PolitiFact++ articles standing in for the open web (Wikipedia is not reachable
offline, so this run uses the no_wikipedia setting)."""

import pytest

from veracity.core.config import LLMConfig
from veracity.core.types import Document
from veracity.llm.factory import build_llm
from veracity.methods.zofia import ZoFiaMethod
from veracity.retrieval.local.corpus import build_local_corpus
from veracity.runtime import resolve_llm
from veracity.runtime.home import home_paths

pytestmark = [pytest.mark.embedded, pytest.mark.data, pytest.mark.nlp, pytest.mark.slow]


async def test_zofia_on_a_politifact_article(benchmark_data_dir, tmp_path):
    from veracity.datasets import load_dataset

    examples = load_dataset("politifact_plusplus", data_dir=benchmark_data_dir)
    target = next(e for e in examples if 800 < len(e.input.body) < 2500)
    others = [e for e in examples if e.id != target.id][:60]
    corpus = build_local_corpus(
        "pfpp-web",
        [
            Document(id=e.id, title=e.input.title, text=e.input.body[:3000], source="pfpp")
            for e in others
        ],
        mode="bm25",
        indexes_dir=tmp_path,
    )
    method = ZoFiaMethod(
        llm=build_llm(resolve_llm(LLMConfig(cache_mode="off")), models_dir=home_paths().models),
        config={"use_wikipedia": False, "max_rounds": 2, "max_sub_claims": 2},
        sources={"web": corpus},
    )
    verdict = await method.check(target.input)
    assert verdict.error is None, verdict.error
    assert verdict.label in ("REAL", "FAKE") or verdict.abstained
    assert verdict.metadata["keywords"], "stage 1 found no keywords"
    assert verdict.usage.llm_calls >= 9  # 5 linguist + 2 expert + extraction + a check + judge
    assert verdict.usage.searches == 1
    assert any(e.kind == "agent_turn" and e.name == "pro" for e in verdict.trace.events)
