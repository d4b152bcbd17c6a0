"""No silent evidence failure: every retrieving method, given a source whose searches all
fail, gives no confident label (an abstention naming the count and the first error, or
the fault as its error); a partly failing source leaves the label and adds a warning."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from failing_sources import DOCS, REFUSED, down, half_down
from veracity.core import context
from veracity.core.labels import get_label_space
from veracity.core.types import Evidence, Verdict
from veracity.methods.base import load_method
from veracity.methods.failures import weigh_search_failures
from veracity.nlp.embeddings import HashingEmbedder
from veracity.nlp.entities import EntitySpan
from veracity.retrieval.base import SourceUnreachable
from veracity.retrieval.managed import ManagedSource
from veracity.testing import InMemoryEncyclopedia, InMemorySource
from veracity.testing.injection import make_input
from veracity.testing.schema import schema_llm
from veracity.tools.base import SourceTool
from veracity.tools.evidence import BrowseTool, TitleInput
from veracity.tools.mcp_client import _observation

FIRST_ERROR = f"SourceUnreachable: broken: {REFUSED}"
# methods whose verdict is built after retrieval failed (they abstain); the others stop at
# the failed search and record it as the verdict's error
ABSTAINING = ("react", "toe", "mermaid", "mermaid_single", "zofia_continue")
ERRING = ("rag", "radar", "radar_single", "zofia")


class CapitalsNER:
    name = "capitals"

    def predict(self, text: str) -> list[EntitySpan]:
        import re

        return [
            EntitySpan(text=m.group(), label="ORG", start=m.start(), end=m.end(), confidence=0.9)
            for m in re.finditer(r"\b[A-Z][a-z]{3,}\b", text)
        ]


def build(name: str, source, *, wiki_fails: bool = False):
    """Method `name` over `source` (as ``web``) on a model that answers any schema."""
    llm = schema_llm()
    if name.startswith("zofia"):
        from veracity.methods.zofia import ZoFiaMethod

        fails = SourceUnreachable("broken", REFUSED) if wiki_fails else None
        config = {"max_rounds": 1}
        if name == "zofia_continue":
            config["on_source_error"] = "continue"
        return ZoFiaMethod(
            llm=llm, config=config, sources={"web": source}, embedder=HashingEmbedder(),
            ner=CapitalsNER(),
            encyclopedia=InMemoryEncyclopedia(
                [("Council", "a town council", "A council runs a town.")], fail_with=fails
            ),
        )  # fmt: skip
    config: dict = {"max_steps": 2} if name == "react" else {}
    if name.startswith("mermaid"):
        config = {"tool_transport": "inprocess", "memory": "off", "max_steps": 2}
    return load_method(name, llm=llm, config=config, sources={"web": source})


async def check(method, name: str) -> Verdict:
    return await method.check(make_input(name.removesuffix("_continue"), 0, "claim", None))


@pytest.mark.parametrize("name", ABSTAINING)
async def test_a_method_whose_searches_all_fail_abstains_saying_why(name):
    verdict = await check(build(name, ManagedSource(down("broken")), wiki_fails=True), name)
    assert verdict.label is None and verdict.abstained and verdict.error is None
    assert verdict.score is None and verdict.confidence is None and verdict.evidence == []
    failed = verdict.usage.failed_searches
    assert failed >= 1 and verdict.usage.searches == 0
    assert f"{failed} failed, none answered" in verdict.abstain_reason
    assert FIRST_ERROR in verdict.abstain_reason
    assert verdict.metadata["unsupported_label"] in get_label_space(verdict.label_space).labels
    found = verdict.search_failures
    assert found.all_failed and found.failed == failed and found.first_error == FIRST_ERROR
    assert verdict.search_warning == f"all {failed} searches failed; first error: {FIRST_ERROR}"
    notes = [e for e in verdict.trace.of_kind("note") if e.name == "search_failures"]
    assert len(notes) == 1 and notes[0].data["failed"] == failed


@pytest.mark.parametrize("name", ERRING)
async def test_a_method_that_stops_at_a_failed_search_records_it_as_its_error(name):
    verdict = await check(build(name, ManagedSource(down("broken"))), name)
    assert verdict.label is None and verdict.error == FIRST_ERROR
    found = verdict.search_failures
    assert found is not None and found.failed >= 1 and found.first_error == FIRST_ERROR
    if name != "zofia":  # ZoFia's encyclopedia lookups answered
        assert found.all_failed and verdict.usage.searches == 0


@pytest.mark.parametrize("name", ABSTAINING + ERRING)
async def test_a_partly_failing_source_keeps_the_label_and_warns(name):
    verdict = await check(build(name, half_down()), name)
    assert verdict.label is not None and not verdict.abstained and verdict.error is None
    found = verdict.search_failures
    assert found is not None and not found.all_failed
    assert found.failed == verdict.usage.failed_searches >= 1
    assert found.answered == verdict.usage.searches >= 1
    total = found.failed + found.answered
    warning = f"{found.failed} of {total} searches failed; first error: {FIRST_ERROR}"
    assert verdict.search_warning == warning
    assert "unsupported_label" not in verdict.metadata


async def test_searches_that_answer_leave_the_verdict_alone():
    verdict = await check(build("react", InMemorySource(DOCS, name="web")), "react")
    assert verdict.label is not None and verdict.usage.failed_searches == 0
    assert verdict.search_failures is None and verdict.search_warning is None


def test_radar_retrieves_from_its_own_corpus_but_not_with_given_evidence(tmp_path):
    from veracity.retrieval.local.corpus import build_local_corpus

    build_local_corpus("own", DOCS, mode="bm25", indexes_dir=tmp_path)
    corpus = {"corpus": {"index": "own", "indexes_dir": str(tmp_path)}}
    assert load_method("radar", llm=schema_llm(), config=corpus).retrieves
    assert not load_method("radar", llm=schema_llm(), config={"evidence": "given"}).retrieves


def test_s2mad_reads_replies_and_retrieves_nothing():
    method = load_method("s2mad", llm=schema_llm())
    assert not method.retrieves and method.source_needs({}) == []
    assert load_method("direct", llm=schema_llm()).retrieves is False


# ----------------------------------------------------------------------- the rule


def _failed_context(failed: int = 2, answered: int = 0) -> context.CheckContext:
    ctx = context.CheckContext()
    for _ in range(failed):
        ctx.record_search_failure(name="web", error=f"SourceUnreachable: web: {REFUSED}")
    ctx.usage.searches = answered
    return ctx


def _labelled(**fields) -> Verdict:
    return Verdict(label="true", label_space="true_false", method="m", score=0.9, **fields)


def test_evidence_the_method_has_without_searching_keeps_its_label():
    remembered = [Evidence(document=DOCS[0], note="recalled from memory")]
    verdict = weigh_search_failures(_labelled(evidence=remembered), _failed_context(),
                                    retrieves=True)  # fmt: skip
    assert verdict.label == "true" and not verdict.abstained
    assert verdict.search_failures.all_failed and verdict.search_warning.startswith("all 2")


def test_a_method_that_does_not_retrieve_keeps_its_label():
    verdict = weigh_search_failures(_labelled(), _failed_context(), retrieves=False)
    assert verdict.label == "true" and verdict.search_failures.failed == 2


def test_answers_of_an_external_tool_server_count_as_answered():
    ctx = _failed_context()
    ctx.tool_answers = 1
    verdict = weigh_search_failures(_labelled(), ctx, retrieves=True)
    assert verdict.label == "true" and verdict.search_warning.startswith("2 of 3 searches failed")


def test_the_abstention_keeps_what_the_method_answered():
    verdict = weigh_search_failures(_labelled(confidence=0.8), _failed_context(), retrieves=True)
    assert verdict.abstained and verdict.label is None
    meta = verdict.metadata
    assert meta["unsupported_label"] == "true" and meta["unsupported_score"] == 0.9
    assert meta["unsupported_confidence"] == 0.8


# ----------------------------------------------------------------------- where failures count


async def test_a_managed_source_counts_a_search_that_gave_up_once():
    ctx = context.CheckContext()
    with context.check_context(ctx):
        tool = SourceTool(ManagedSource(down("web")), "search_web", "web")
        observation = await tool.run("council budget")
    assert observation.error and ctx.usage.failed_searches == 1 and ctx.usage.searches == 0
    failures = [e for e in ctx.trace.of_kind("error") if e.data.get("search_failed")]
    assert len(failures) == 1 and failures[0].data["attempts"] == 2  # retried, then given up
    assert ctx.first_search_error == f"SourceUnreachable: web: {REFUSED}"


async def test_a_failed_browse_call_is_a_failed_search_not_a_search():
    async def broken(args):
        raise SourceUnreachable("wikipedia", REFUSED)

    tool = BrowseTool("wikipedia_summary", "summary", TitleInput, broken, source="wikipedia")
    ctx = context.CheckContext()
    with context.check_context(ctx):
        observation = await tool.call(TitleInput(title="Council"))
    assert observation.error and ctx.usage.searches == 0 and ctx.usage.failed_searches == 1


async def test_failures_in_the_tool_server_reach_the_client_check():
    from veracity.mcp.tool_server import run_tool

    tool = SourceTool(ManagedSource(down("web")), "search_web", "web")
    result = await run_tool(tool, {"query": "council budget"})
    assert [e["search_failed"] for e in result.errors if "search_failed" in e] == [True]
    reply = SimpleNamespace(
        structured_content=result.model_dump(mode="json"), is_error=False,
        content=[SimpleNamespace(type="text", text=result.text)],
    )  # fmt: skip
    ctx = context.CheckContext()
    observation = _observation(reply, ctx, "mcp:evidence", 0.0)
    assert observation.error and ctx.usage.failed_searches == 1 and ctx.usage.searches == 0
    assert ctx.first_search_error == f"SourceUnreachable: web: {REFUSED}"


def test_an_external_tool_counts_once_failed_or_answered():
    def reply(is_error: bool) -> SimpleNamespace:
        text = SimpleNamespace(type="text", text="boom" if is_error else "facts")
        return SimpleNamespace(structured_content=None, is_error=is_error, content=[text])

    ctx = context.CheckContext()
    assert _observation(reply(True), ctx, "mcp:facts", 0.0).error == "boom"
    assert _observation(reply(False), ctx, "mcp:facts", 0.0).text == "facts"
    assert ctx.usage.failed_searches == 1 and ctx.tool_answers == 1
    assert ctx.first_search_error == "boom"
