"""FactAgent on a scripted model: one finding per tool, then a verdict that weighs them."""

import json

import pytest

from veracity.core.errors import MethodConfigError
from veracity.core.types import Article, Document
from veracity.methods.factagent import FactAgentMethod
from veracity.prompting import unfenced_variables
from veracity.testing import InMemorySource, ScriptedLLM, ScriptedReply

DOCS = [Document(id="snopes", title="Fact check", text="No, the moon landing was not staged.")]
ARTICLE = Article(
    title="Moon landing staged, insider reveals",
    body="SHOCKING!!! An insider says the 1969 moon landing was filmed in a studio.",
    url="https://totally-real-news.example/moon",
)


def finding(suspicious, why="A finding."):
    return json.dumps({"reasoning": why, "suspicious": suspicious})


def scripted(flags, label="FAKE"):
    llm = ScriptedLLM()
    for tool, flag in flags.items():
        llm.on(".*", finding(flag, f"{tool} says so."), tag=f"factagent:{tool}")
    text = json.dumps({"reasoning": "Search and URL point to fake news.", "label": label})
    other = ({"FAKE", "REAL"} - {label}).pop()
    reply = ScriptedReply(text, alternatives={label: 0.9, other: 0.1}, at=f'{label}"')
    llm.on(".*", reply, tag="factagent:verdict")
    return llm


def agent(llm, **config):
    return FactAgentMethod(
        llm=llm, config=config, sources={"web": InMemorySource(DOCS, name="web")}
    )


async def test_every_tool_reports_then_the_verdict_weighs_their_findings():
    flags = {"phrase": True, "language": True, "commonsense": False, "standing": False,
             "search": True, "url": True}  # fmt: skip
    llm = scripted(flags)
    v = await agent(llm).check(ARTICLE)
    assert v.error is None and v.label == "FAKE" and v.confidence == pytest.approx(0.9)
    assert [f["tool"] for f in v.metadata["findings"]] == list(flags)
    assert v.metadata["suspicious"] == ["phrase", "language", "search", "url"]
    assert v.usage.llm_calls == 7 and v.usage.searches == 1
    assert v.evidence[0].document.id == "snopes"
    # the search tool searched the headline and read the results, fenced
    [call] = [e.data for e in v.trace.events if e.kind == "tool_call"]
    assert call["arguments"] == {"query": "Moon landing staged, insider reveals"}
    search = llm.calls_tagged("factagent:search")[0].messages[-1].content
    assert "<results>" in search and "not staged" in search
    url = llm.calls_tagged("factagent:url")[0].messages[-1].content
    assert "totally-real-news.example" in url
    # the verdict sees each tool's finding and whether it was a warning sign
    final = llm.calls_tagged("factagent:verdict")[0].messages[-1].content
    assert "url tool (found a sign of fake news)" in final
    assert "commonsense tool (found nothing suspicious)" in final
    assert "standing says so." in final
    turns = [e.data["tool"] for e in v.trace.events if e.kind == "agent_turn"]
    assert turns == list(flags)


async def test_shared_layout_opens_every_prompt_with_the_news():
    """prompt_layout: shared (the default): one system note for the check and the news
    first in every prompt, the template's system text last; the verdict is the paper's."""
    flags = {"phrase": True, "language": False, "commonsense": False, "standing": False,
             "search": True, "url": True}  # fmt: skip
    verdicts, calls = {}, {}
    for layout in ("paper", "shared"):
        llm = scripted(flags)
        verdicts[layout] = await agent(llm, prompt_layout=layout).check(ARTICLE)
        calls[layout] = llm.calls
    assert verdicts["shared"].label == verdicts["paper"].label == "FAKE"
    assert len({c.messages[0].content for c in calls["shared"]}) == 1
    users = [c.messages[-1].content for c in calls["shared"]]
    news = users[0][: users[0].index("</news>")]
    assert news and all(u.startswith(news) for u in users)
    # the tools' common description follows the news in every tool prompt, so only the
    # task differs; the verdict's own system text closes its prompt
    tools, verdict = users[:-1], users[-1]
    role = "You are one of the tools of a fake-news detection agent."
    assert all(role in u and "=== Your role ===" not in u for u in tools)
    opening = news + "</news>\n\n" + role
    assert all(u.startswith(opening) for u in tools)
    assert role not in verdict and verdict.index("=== Your role ===") > verdict.index("</news>")
    assert len({c.messages[0].content for c in calls["paper"]}) > 1


async def test_no_url_skips_the_url_tool_and_max_tokens_caps_every_call():
    article = Article(title="Local fair opens", body="The county fair opened on Friday.")
    llm = scripted({t: False for t in ("phrase", "language", "commonsense", "standing",
                                       "search")}, label="REAL")  # fmt: skip
    v = await agent(llm, max_tokens=400).check(article)
    assert v.label == "REAL" and "url" not in [f["tool"] for f in v.metadata["findings"]]
    assert {c.max_tokens for c in llm.calls} == {400} and len(llm.calls) == 6
    notes = [e.data["text"] for e in v.trace.events if e.kind == "note" and e.name == "factagent"]
    assert notes == ["url tool skipped: the input has no URL"]


async def test_tools_can_be_chosen_and_without_search_no_source_is_needed():
    llm = scripted({"commonsense": True})
    v = await FactAgentMethod(llm=llm, config={"tools": ["commonsense"]}).check(ARTICLE)
    assert v.usage.llm_calls == 2 and v.usage.searches == 0
    assert FactAgentMethod.source_needs({"tools": ["phrase"]}) == []
    assert [n.name for n in FactAgentMethod.source_needs({})] == ["web"]
    with pytest.raises(MethodConfigError, match="needs a source"):
        FactAgentMethod(llm=ScriptedLLM())
    with pytest.raises(MethodConfigError, match="tools"):
        FactAgentMethod(llm=ScriptedLLM(), config={"tools": ["horoscope"]})


async def test_a_broken_finding_is_the_error_never_a_label():
    llm = ScriptedLLM()
    llm.on(".*", '{"reasoning": "x"}', tag="factagent:phrase")
    v = await agent(llm).check(ARTICLE)
    assert v.label is None and "StructuredOutputError" in v.error


def test_the_templates_fence_what_they_show():
    from importlib import resources

    folder = resources.files("veracity.methods.factagent") / "prompts"
    for name in ("tool.j2", "verdict.j2"):
        assert unfenced_variables((folder / name).read_text("utf-8")) == [], name
