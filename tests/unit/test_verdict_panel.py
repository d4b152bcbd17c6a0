"""What the verdict panel tells a user: reasons that end, evidence, what was cut."""

from __future__ import annotations

from rich.console import Console

from veracity.cli.render import cut_notes, verdict_panel
from veracity.core.types import Article, Claim, Document, Post, Reply
from veracity.methods.base import load_method
from veracity.methods.labelling import whole_sentences
from veracity.testing import InMemorySource, ScriptedLLM, ScriptedReply


def _shown(verdict, text="input") -> str:
    console = Console(width=120, record=True)
    console.print(verdict_panel(verdict, text))
    return console.export_text()


def test_reasoning_cut_by_its_cap_ends_at_a_sentence():
    assert whole_sentences("It is false. The tower is in Paris.") == (
        "It is false. The tower is in Paris."
    )
    assert whole_sentences("It is false. The tower is in Paris. Moreover the") == (
        "It is false. The tower is in Paris. […]"
    )
    assert whole_sentences("a phrase, no sentence end") == "a phrase, no sentence end"
    assert whole_sentences('He said "no." Then') == 'He said "no." […]'
    assert whole_sentences("") == ""


async def test_cot_rationale_ends_and_is_shown():
    reply = '{"reasoning": "The tower stands in Paris. So the claim is wro", "label": "false"}'
    llm = ScriptedLLM(default=ScriptedReply(reply))
    verdict = await load_method("cot", llm=llm).check(Claim(text="The tower is in Berlin."))
    assert verdict.rationale == "The tower stands in Paris. […]"
    assert "The tower stands in Paris. […]" in _shown(verdict)


async def test_a_long_article_says_what_was_cut_and_how_to_raise_it():
    llm = ScriptedLLM(default=ScriptedReply('{"label": "false"}'))
    method = load_method("direct", llm=llm, config={"max_input_chars": 100})
    verdict = await method.check(Article(title="T", body="word " * 100))
    assert cut_notes(verdict) == [
        "note: the method read the first 100 of 500 characters of the article's text (raise "
        "it with --set max_input_chars=N; a longer input needs a model with a larger context: "
        "--config with `llm: {n_ctx: N}`, or --model)"
    ]
    assert "the method read the first 100 of 500" in _shown(verdict)


async def test_replies_beyond_the_limit_are_noted():
    llm = ScriptedLLM(default=ScriptedReply('{"label": "false"}'))
    replies = [Reply(id=f"r{i}", text=f"reply {i}") for i in range(12)]
    verdict = await load_method("direct", llm=llm).check(Post(text="p", replies=replies))
    assert cut_notes(verdict)[0].startswith(
        "note: the method read the first 10 of 12 replies of the post"
    )


async def test_rag_panel_shows_the_passages_and_whether_they_were_cited():
    docs = [
        Document(id="d1", text="Paris hosts the tower.", title="Tower", url="https://x.example/t")
    ]
    llm = ScriptedLLM(default=ScriptedReply('{"cited": [], "label": "false"}'))
    method = load_method("rag", llm=llm, sources={"mem": InMemorySource(docs)})
    verdict = await method.check(Claim(text="The tower is in Berlin."))
    shown = _shown(verdict)
    assert "Paris hosts the tower." in shown and "retrieved, not cited" in shown
