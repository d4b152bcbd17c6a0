"""The methods' shared kit (`veracity.methods.kit`) and the claim a check carries to its
sources (`CheckContext.claim`), which methods set instead of importing a source."""

from __future__ import annotations

import pytest

from veracity.core import context
from veracity.core.types import Document
from veracity.methods.kit import claims_or_whole, gathered_evidence
from veracity.retrieval.base import Query
from veracity.testing.injection import documents, make_input
from veracity.testing.schema import schema_llm
from veracity.testing.sources import InMemorySource

# the methods that check one claim and search for it: a recorded source replays that
# claim's searches only if the claim reaches it
CLAIM_SEARCHERS = (
    "factagent", "factcheck_gpt", "factool", "fire", "folk", "hiss", "mermaid", "programfc",
    "safe", "self_ask", "steel",
)  # fmt: skip
CONFIGS = {
    "fire": {"max_steps": 2},
    "mermaid": {"tool_transport": "inprocess", "memory": "off"},
}


def doc(i: str) -> Document:
    return Document(id=i, text=f"text {i}")


def test_gathered_evidence_keeps_each_document_once_with_the_note_that_found_it_first():
    found = [("search 1", [doc("a"), doc("b"), doc("a")]), ("search 2", [doc("b"), doc("c")])]
    evidence = gathered_evidence(found)
    assert [(e.document.id, e.note) for e in evidence] == [
        ("a", "search 1"),
        ("b", "search 1"),
        ("c", "search 2"),
    ]
    assert [e.document.id for e in gathered_evidence(found, seen=["b"])] == ["a", "c"]


def test_no_claims_means_the_input_is_checked_whole_and_the_trace_says_so():
    text = "  The council   built a bridge.\n"
    with context.check_context() as ctx:
        (whole,) = claims_or_whole([], text, actor="safe", none_found="no atomic facts extracted")
    said = "The council built a bridge."
    assert (whole.id, whole.text, whole.atomic) == ("c1", said, said)
    assert whole.spans == [(0, len(text))]
    (note,) = ctx.trace.of_kind("note")
    assert note.data["text"] == "no atomic facts extracted: checking the input whole"
    some = [whole.model_copy(update={"id": "c7"})]
    with context.check_context() as quiet:
        assert claims_or_whole(some, text, actor="safe", none_found="none") == some
    assert not quiet.trace.of_kind("note")


class ClaimSeeingSource(InMemorySource):
    """Notes the claim of the running check at each search, as a recorded source reads it."""

    def __init__(self, docs: list[Document]):
        super().__init__(docs, name="web")
        self.claims_seen: list[str | None] = []

    async def search(self, query: Query) -> list[Document]:
        self.claims_seen.append(context.current().claim)
        return await super().search(query)


@pytest.mark.parametrize("name", CLAIM_SEARCHERS)
async def test_a_method_that_checks_one_claim_hands_it_to_its_sources(name):
    from veracity.methods.base import load_method

    source = ClaimSeeingSource(documents(0))
    method = load_method(
        name, llm=schema_llm(), config=dict(CONFIGS.get(name, {})), sources={"web": source}
    )
    item = make_input(name, 0, "claim", None)
    await method.check(item)
    assert source.claims_seen, f"{name} searched nothing"
    assert set(source.claims_seen) == {item.content}


# the baselines whose model-call and search settings come from the shared declarations
BASELINES = (
    "adsent", "afacta", "cot", "defgen", "direct", "factagent", "factcheck_gpt", "factool",
    "fire", "folk", "hiss", "programfc", "rag", "react", "safe", "self_ask", "steel", "teller",
)  # fmt: skip


@pytest.mark.parametrize("name", BASELINES)
def test_a_baseline_keeps_the_shared_bounds_and_meaning_of_its_settings(name):
    """A config that states its paper's default (``max_tokens: ReplyTokens = 700``) keeps
    the declaration's bounds and description; one that re-declared the field its own way
    would not."""
    from veracity.core.registry import methods
    from veracity.methods.config import GenerationSettings, RetrievalSettings

    config = methods.get(name).config_class
    shared = {"temperature": GenerationSettings, "max_tokens": GenerationSettings}
    assert issubclass(config, GenerationSettings)
    if issubclass(config, RetrievalSettings):
        shared |= {"top_k": RetrievalSettings, "max_result_chars": RetrievalSettings}
    for field, mixin in shared.items():
        own, declared = config.model_fields[field], mixin.model_fields[field]
        assert own.description == declared.description, (name, field)
        assert own.metadata == declared.metadata, (name, field)
