"""Evidence memory (veracity.evidence.memory), with the hashing embedder as a test double."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from pydantic import ValidationError

from veracity.core import context
from veracity.core.types import Document
from veracity.evidence.memory import (
    EvidenceMemory,
    EvidenceMemoryError,
    MemoryConfig,
    normalise_entity,
)
from veracity.nlp.embeddings import get_embedder

WHO = Document(id="w1", text="WHO declared a pandemic in March 2020.", url="https://who.int/a")
UN = Document(id="u1", text="The UN was founded in 1945.", url="https://un.org/b")
NASA = Document(id="n1", text="Apollo 11 landed in 1969.", url="https://nasa.gov/c")


@pytest.fixture
def memory(tmp_path):
    return EvidenceMemory(
        path=tmp_path / "memory.sqlite",
        embedding_model=get_embedder("hashing"),
        similarity_threshold=0.6,
    )


def test_normalise_entity():
    assert normalise_entity("  The United  Nations ") == "united nations"
    assert normalise_entity("Café Müller") == "cafe muller"
    assert normalise_entity("U.N.") == "u n"
    assert normalise_entity("An Post") == "post"
    assert normalise_entity("...") == ""


def test_store_then_recall_by_exact_and_normalised_name(memory):
    assert memory.store(["World Health Organization"], [WHO], query="who pandemic", source="web")
    memory.store(["The United Nations"], [UN])
    hits = memory.recall(["World Health Organization", "united nations"])
    by_id = {h.document.id: h for h in hits}
    assert by_id["w1"].match == "exact" and by_id["w1"].similarity == 1.0
    assert by_id["w1"].query == "who pandemic" and by_id["w1"].source == "web"
    assert by_id["u1"].match == "normalised" and by_id["u1"].entity == "The United Nations"
    assert by_id["u1"].matched == "united nations"
    assert by_id["w1"].document == WHO


def test_semantic_recall_above_threshold_only(memory, tmp_path):
    memory.store(["World Health Organization"], [WHO])
    hits = memory.recall(["world health"])  # shares two of three words
    assert [h.match for h in hits] == ["semantic"]
    assert 0.6 <= hits[0].similarity < 1.0
    strict = EvidenceMemory(
        path=tmp_path / "memory.sqlite",
        embedding_model=get_embedder("hashing"),
        similarity_threshold=0.95,
    )
    assert strict.recall(["world health"]) == []


def test_no_embedder_means_names_only(tmp_path):
    mem = EvidenceMemory(MemoryConfig(path=tmp_path / "m.sqlite", embedder=None))
    mem.store(["World Health Organization"], [WHO])
    assert mem.recall(["world health"]) == []
    assert [h.document.id for h in mem.recall(["world health organization"])] == ["w1"]


def test_unrelated_entities_miss(memory):
    memory.store(["World Health Organization"], [WHO])
    assert memory.recall(["Apollo program"]) == []
    assert memory.recall([]) == []


def test_duplicates_are_stored_once_and_linked_to_new_entities(memory):
    assert memory.store(["pandemic"], [WHO]) == 1
    copy = WHO.model_copy(update={"id": "other-id", "score": 3.0})  # same url and text
    assert memory.store(["World Health Organization"], [copy]) == 0
    stats = memory.stats()
    assert stats.entries == 1 and stats.entities == 2
    assert stats.stored == 1 and stats.duplicates == 1
    assert [h.document.id for h in memory.recall(["World Health Organization"])] == ["w1"]


def test_namespaces_do_not_leak(memory):
    train = memory.with_namespace("scifact/train")
    test = memory.with_namespace("scifact/test")
    train.store(["aspirin"], [NASA])
    assert test.recall(["aspirin"]) == []
    assert memory.recall(["aspirin"]) == []
    assert [h.document.id for h in train.recall(["aspirin"])] == ["n1"]
    assert test.stats().entries == 0 and train.stats().entries == 1


def test_ttl_hides_and_purges_old_evidence(tmp_path, monkeypatch):
    mem = EvidenceMemory(path=tmp_path / "m.sqlite", embedder=None, ttl_s=60)
    now = time.time()
    monkeypatch.setattr("veracity.evidence.memory._now", lambda: now - 120)
    mem.store(["moon"], [NASA], query="moon landing", source="web")
    monkeypatch.setattr("veracity.evidence.memory._now", lambda: now)
    mem.store(["un"], [UN])
    assert mem.recall(["moon"]) == []
    assert mem.lookup_search("moon landing", "web") is None
    assert [h.document.id for h in mem.recall(["un"])] == ["u1"]
    assert mem.purge_expired() == 1
    assert mem.stats().entries == 1 and mem.stats().purged == 1


def test_per_entity_cap_keeps_newest(memory):
    docs = [Document(id=f"d{i}", text=f"fact number {i}") for i in range(8)]
    for doc in docs:
        memory.store(["topic"], [doc])
    capped = EvidenceMemory(memory.config, embedding_model=memory.embedder, max_per_entity=3)
    assert [h.document.id for h in capped.recall(["topic"])] == ["d7", "d6", "d5"]
    assert len(memory.recall(["topic"], limit=2)) == 2


def test_lookup_search_replays_and_counts_a_saved_search(memory):
    memory.store(["WHO"], [WHO, UN], query="Pandemic  declared", source="web")
    with context.check_context() as ctx:
        docs = memory.lookup_search("pandemic declared", "web")
        assert memory.lookup_search("pandemic declared", "wikipedia") is None
    assert [d.id for d in docs] == ["w1", "u1"]
    assert ctx.usage.searches == 1 and ctx.usage.cached_searches == 1
    assert ctx.trace.of_kind("search")[0].name == "memory:web"
    assert memory.stats().searches_saved == 1


def test_stats_count_hits_and_misses(memory):
    memory.store(["moon"], [NASA])
    memory.recall(["moon"])
    memory.recall(["mars"])
    memory.recall(["mars"])
    s = memory.stats()
    assert (s.recalls, s.hits, s.misses) == (3, 1, 2)


def test_recall_and_store_are_traced(memory):
    with context.check_context() as ctx:
        memory.store(["moon"], [NASA])
        memory.recall(["moon"])
    notes = [
        e.data["action"] for e in ctx.trace.of_kind("memory_recall") if e.name == "evidence_memory"
    ]
    assert notes == ["store", "recall"]


def test_memory_persists_across_instances(tmp_path):
    path = tmp_path / "m.sqlite"
    EvidenceMemory(path=path, embedder=None).store(["moon"], [NASA])
    assert [h.document.id for h in EvidenceMemory(path=path, embedder=None).recall(["Moon"])] == [
        "n1"
    ]


def test_clear_empties_only_its_namespace(memory):
    memory.store(["moon"], [NASA])
    other = memory.with_namespace("other")
    other.store(["moon"], [NASA])
    assert memory.clear() == 1
    assert memory.recall(["moon"]) == [] and memory.stats().entries == 0
    assert other.stats().entries == 1


def test_thread_safe_concurrent_stores(memory):
    def work(i: int) -> None:
        for j in range(10):
            memory.store([f"entity {i}", "shared"], [Document(id=f"{i}-{j}", text=f"t {i} {j}")])
            memory.recall(["shared"])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats = memory.stats()
    assert stats.entries == 60 and stats.stored == 60 and stats.recalls == 60


async def test_async_api(memory):
    stored = await asyncio.gather(
        memory.astore(["moon"], [NASA]), memory.astore(["un"], [UN], query="un", source="web")
    )
    assert sorted(stored) == [1, 1]
    hits = await memory.arecall(["moon", "un"])
    assert {h.document.id for h in hits} == {"n1", "u1"}
    assert [d.id for d in await memory.alookup_search("un", "web")] == ["u1"]


def test_bad_config_and_unusable_path(tmp_path):
    with pytest.raises(ValidationError):
        MemoryConfig(similarity_threshold=1.5)
    with pytest.raises(ValidationError):
        MemoryConfig(namespace="")
    with pytest.raises(ValidationError):
        MemoryConfig(ttl=5)  # unknown key
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(EvidenceMemoryError, match="cannot open evidence memory"):
        EvidenceMemory(path=blocker / "m.sqlite", embedder=None)


@pytest.mark.nlp
def test_semantic_recall_with_minilm_at_the_default_threshold(tmp_path):
    mem = EvidenceMemory(path=tmp_path / "m.sqlite")  # all-MiniLM-L6-v2, threshold 0.8
    mem.store(["United States"], [UN])
    mem.store(["Barack Obama"], [NASA])
    hits = mem.recall(["USA", "Eiffel Tower"])
    assert [(h.document.id, h.match) for h in hits] == [("u1", "semantic")]
    assert mem.recall(["Michelle Obama"]) == []  # related, but another person


def test_memory_and_entity_merging_share_one_normaliser():
    from veracity.nlp.entities import normalise_entity as nlp_key

    assert normalise_entity is nlp_key
    assert nlp_key("European Union’s") == nlp_key("the European Union")
